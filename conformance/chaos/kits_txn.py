"""How each third-party client takes part in a real-time ``--txn`` seed
(conformance/chaos/realtime_txn.py): a transactional producer whose errors say whether to call
again, abort or give up (``TxnError``), and a read_committed consumer assigned to every partition
of its topics from the beginning.

Settings mirror the default workload's kits (conformance/chaos/kits.py) and our client's
transactional load (conformance/chaos/txn_load.py: ``transaction.timeout.ms`` 30 s,
``max.block.ms`` 10 s).
"""

from __future__ import annotations

from typing import Any, Iterable

from conformance.chaos.realtime_txn import CALL_S, Outcome, TxnError

# --- confluent-kafka (librdkafka) --------------------------------------------------------------
CONFLUENT_TXN = {"transaction.timeout.ms": 30_000, "message.timeout.ms": 30_000}   # librdkafka: message <= transaction


def _confluent_error(exc: Exception) -> TxnError:
    """librdkafka's KafkaError as the driver's: ``retriable()``, ``txn_requires_abort()``,
    ``fatal()`` (rdkafka.h, "Transactional producer API": what each means for the next call).
    ``exc`` is a KafkaException carrying one, or the KafkaError itself (``flush`` raises a fatal
    error as it is)."""
    err: Any = exc if hasattr(exc, "retriable") else (exc.args[0] if exc.args else None)
    if err is None or not hasattr(err, "retriable"):
        return TxnError(f"{type(exc).__name__}: {exc}", fatal=True)
    return TxnError(f"{err.name()}: {err.str()}", retriable=err.retriable(), abortable=err.txn_requires_abort(),
                    fatal=err.fatal())


class ConfluentTxnProducer:
    """``base``: the default workload's settings (conformance/chaos/kits.py)."""

    def __init__(self, base: dict, bootstrap: str, transactional_id: str, client_id: str) -> None:
        from confluent_kafka import Producer

        self._producer = Producer({**base, **CONFLUENT_TXN, "bootstrap.servers": bootstrap,
                                   "transactional.id": transactional_id, "client.id": client_id})

        # delivery reports, recorded once the call that served them returned: a callback only
        # appends (librdkafka may raise a fatal error out of the call serving it, mid-callback,
        # and a callback holding the history's lock then would leave it held)
        self._reports: list[tuple[Outcome, Any, Any]] = []     # (outcome, KafkaError or None, Message)

    def _do(self, call: Any, *args: Any) -> Any:
        from confluent_kafka import KafkaError, KafkaException

        try:
            return call(*args)
        except (KafkaException, KafkaError) as exc:
            raise _confluent_error(exc) from None
        finally:
            self._deliver()

    def _deliver(self) -> None:
        while self._reports:
            outcome, err, msg = self._reports.pop(0)
            if err is not None:
                outcome(None, f"{err.name()}: {err.str()}")
            else:
                outcome(msg.offset() if msg.offset() is not None else -1, None)

    def init(self) -> None:
        self._do(self._producer.init_transactions, CALL_S)

    def begin(self) -> None:
        self._do(self._producer.begin_transaction)

    def send(self, topic: str, partition: int, value: bytes, outcome: Outcome) -> None:
        reports = self._reports

        def on_delivery(err, msg) -> None:
            # nothing called on err or msg here: with a fatal error pending, a method call inside the
            # callback raises SystemError ("returned a result with an exception set")
            reports.append((outcome, err, msg))
        try:
            self._do(self._producer.produce, topic, value, None, partition, on_delivery)
        except BufferError as exc:
            raise TxnError(f"BufferError: {exc}", retriable=True) from None
        self._do(self._producer.poll, 0)

    def flush(self, timeout_s: float) -> None:
        self._do(self._producer.flush, timeout_s)

    def commit(self) -> None:
        self._do(self._producer.commit_transaction, CALL_S)
        self._do(self._producer.poll, 0)   # the delivery reports the commit's flush received

    def abort(self) -> None:
        self._do(self._producer.abort_transaction, CALL_S)
        self._do(self._producer.poll, 0)

    def close(self) -> None:
        """Every pending delivery report served now (purged ones fail), not by rd_kafka_destroy
        in whichever thread the garbage collector runs."""
        try:
            self._do(self._producer.purge)
            self._do(self._producer.flush, CALL_S)
        except TxnError:
            pass     # a fenced producer's flush raises its fatal error; the reports are served


class ConfluentTxnConsumer:
    def __init__(self, base: dict, bootstrap: str, topics: list[str], partitions: int, client_id: str,
                 group: str) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self._consumer = Consumer({**base, "bootstrap.servers": bootstrap, "client.id": client_id,
                                   "group.id": group, "isolation.level": "read_committed"})
        self._tps = [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(partitions)]
        self._consumer.assign(self._tps)

    def poll(self, timeout_s: float) -> Iterable[tuple[str, int, int, bytes | None]]:
        out = []
        for msg in self._consumer.consume(500, timeout_s):
            if not msg.error():
                out.append((msg.topic(), msg.partition(), msg.offset(), msg.value()))
        return out

    def positions(self) -> dict[tuple[str, int], int] | None:
        from confluent_kafka import TopicPartition

        found = self._consumer.position([TopicPartition(tp.topic, tp.partition) for tp in self._tps])
        # OFFSET_INVALID: nothing consumed there yet, so the next offset is the first
        return {(tp.topic, tp.partition): max(tp.offset, 0) for tp in found}

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        try:
            self._consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                  asynchronous=False)
        except (KafkaException, KafkaError) as exc:
            raise _confluent_error(exc) from None

    def close(self) -> None:
        self._consumer.close()



# --- programs of the line protocol (conformance/adapters/line_protocol.py): the Java client and franz-go
# One program per transactional producer and one per read_committed consumer (ChaosTxn.java, and
# franzgo-adapter's chaostxn.go with the same commands);
# the settings are the default workload's (Kafka's own names) and our client's transactional ones.
LINE_TXN = {"transaction.timeout.ms": 30_000, "max.block.ms": 10_000}
LINE_START_S = 120.0     # a JVM starting on a busy 2-core machine
LINE_CALL_S = 60.0       # a call bounded by the client's own timeouts (max.block.ms), with a wide margin


class LineTxnProducer:
    """``base``: the default workload's producer settings; ``make``: a new program."""

    def __init__(self, make: Any, base: dict, bootstrap: str, transactional_id: str, client_id: str) -> None:
        self._adapter = make()
        self._outcomes: dict[int, Outcome] = {}
        self._n = 0
        self._call("chaos_txn_producer", bootstrap=bootstrap, client_id=client_id, timeout_s=LINE_START_S,
                   config={**base, **LINE_TXN, "transactional.id": transactional_id, "client.id": client_id})

    def _call(self, cmd: str, timeout_s: float = LINE_CALL_S, **fields: Any) -> dict:
        answer = self._adapter.request({"cmd": cmd, **fields}, timeout_s)
        for n, offset, error in answer.get("outcomes", []):
            outcome = self._outcomes.pop(n, None)
            if outcome is not None:
                outcome(offset if error is None else None, error)
        if answer.get("fatal"):
            raise TxnError(f"{cmd}: {answer['fatal']}", fatal=True)
        if not answer.get("ok"):
            kind = answer.get("kind", "fatal")
            raise TxnError(str(answer.get("error")), retriable=kind == "retriable", abortable=kind == "abortable",
                           fatal=kind == "fatal")
        return answer

    def init(self) -> None:
        self._call("chaos_txn_init")

    def begin(self) -> None:
        self._call("chaos_txn_begin")

    def send(self, topic: str, partition: int, value: bytes, outcome: Outcome) -> None:
        self._n += 1
        self._outcomes[self._n] = outcome
        self._call("chaos_txn_send", n=self._n, topic=topic, partition=partition, value=value)

    def flush(self, timeout_s: float) -> None:
        self._call("chaos_txn_flush")

    def commit(self) -> None:
        self._call("chaos_txn_commit")

    def abort(self) -> None:
        self._call("chaos_txn_abort")

    def close(self) -> None:
        try:
            self._call("chaos_txn_close")
        except TxnError:
            pass     # closing after a fatal error; the outcomes it reported are recorded
        finally:
            self._adapter.shutdown()


class LineTxnConsumer:
    def __init__(self, make: Any, base: dict, bootstrap: str, topics: list[str], partitions: int, client_id: str,
                 group: str) -> None:
        self._adapter = make()
        self._call("chaos_txn_consumer", LINE_START_S, bootstrap=bootstrap, client_id=client_id, topics=topics,
                   partitions=partitions, config={**base, "group.id": group, "isolation.level": "read_committed"})

    def _call(self, cmd: str, timeout_s: float = LINE_CALL_S, **fields: Any) -> dict:
        answer = self._adapter.request({"cmd": cmd, **fields}, timeout_s)
        if answer.get("fatal") or not answer.get("ok"):
            raise TxnError(str(answer.get("fatal") or answer.get("error")), retriable=answer.get("kind") == "retriable")
        return answer

    def poll(self, timeout_s: float) -> Iterable[tuple[str, int, int, bytes | None]]:
        from conformance.adapters.line_protocol import decode_value

        answer = self._call("chaos_txn_poll", timeout_s + LINE_CALL_S, timeout_ms=int(timeout_s * 1000))
        return [(t, p, o, decode_value(v)) for t, p, o, v in answer.get("records", [])]

    def positions(self) -> dict[tuple[str, int], int] | None:
        try:
            return {(t, p): o for t, p, o in self._call("chaos_txn_positions")["positions"]}
        except TxnError:
            return None

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        self._call("chaos_txn_commit_offsets", offsets=[[t, p, o] for (t, p), o in offsets.items()])

    def close(self) -> None:
        try:
            self._call("chaos_txn_consumer_close")
        except TxnError:
            pass
        finally:
            self._adapter.shutdown()
