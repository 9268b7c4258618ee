"""broker-emu's own client, blocking face: ``client.Producer``, ``client.Consumer`` and
``client.Admin`` (an application thread + a trio network thread each), over real loopback TCP in
real time with scaled timeouts, like any third-party client.

Each step is the async face's (ours.py, ours_kip848.py, ours_admin.py) made with the blocking
calls: the same settings (ours_common.py), the same outcomes; arguments in unscaled seconds or
milliseconds (``open_s``, ``gap_s``, ``stall_ms``...) are divided by the run's scale here."""

from __future__ import annotations

import time
from typing import Any, Callable

from client.errors import KafkaError
from client.transport import Connect
from conformance.adapters import txn_probe
from conformance.adapters.admin_steps import ADMIN_OPERATIONS
from conformance.adapters.base import CONSUMER_CALLS, RealTimeAdapter, RunEnv, list_rounds
from conformance.adapters.ours_admin import OursBlockingAdmin
from conformance.adapters.ours_blocking_kip848 import KIP848_OPERATIONS, OursBlockingKip848
from conformance.adapters.ours_capabilities import OURS_BLOCKING
from conformance.adapters.ours_common import (
    configure_producer,
    consumer_settings,
    error_name,
    first_visible,
    plain_producer_settings,
    producer_settings,
    real_time_backoffs,
    transaction_failed,
    txn_settings,
)
from conformance.adapters.ours_share import blocking_share_step
from conformance.adapters.py_common import short, warm_step
from conformance.adapters.share_stories import SHARE_OPERATIONS
from conformance.model import SILENT_MEMBER, Operation, Outcome

TXN_OPERATIONS = frozenset({"transaction", "txn_zombie", "read_committed_behind_open_txn", "txn_abort_then_commit",
                            "txn_error_probe"})
RETRIED_COMMIT_S = 60.0   # a timed-out commit called again: long enough for the retried EndTxn
MIN_GAP_S = 0.05          # produce_pipelined: the next send after the first is surely in flight (real time)


class OurBlockingAdapter(OursBlockingKip848, OursBlockingAdmin, RealTimeAdapter):
    name = "broker-emu (blocking)"
    capabilities = OURS_BLOCKING
    sasl = True   # security.protocol and sasl.* are producer settings: the client connects with them itself
    operations = frozenset({"produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
                            "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
                            "admin_list_topics", "join_group_held", "configure_producer",
                            "produce_pipelined"}) | TXN_OPERATIONS | KIP848_OPERATIONS | ADMIN_OPERATIONS | SHARE_OPERATIONS
    warm_up_calls = CONSUMER_CALLS

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [blocking_share_step(s, env, self._connect(env)) if s.kind in SHARE_OPERATIONS
                else getattr(self, f"_{s.kind}", self._consumer_step)(s, env) for s in steps]

    # -- clients -----------------------------------------------------------------------------------
    def _connect(self, env: RunEnv) -> Connect | None:
        """None: the client's own connect (TCP, with the scenario's TLS and SASL)."""
        return None

    def _consumer(self, env: RunEnv, config: dict, connect: Connect | None = None) -> Any:
        from client import Consumer

        return Consumer(config, connect=connect or self._connect(env))

    def _producer(self, env: RunEnv, config: dict) -> Any:
        from client import Producer

        return Producer(config, connect=self._connect(env))

    # -- settings --------------------------------------------------------------------------------
    def _group_config(self, env: RunEnv, group: str | None, client_id: str | None = None) -> dict:
        return {**consumer_settings(env, group, client_id), **real_time_backoffs(env)}

    def _producer_config(self, env: RunEnv, client_id: str | None = None) -> dict:
        return {**producer_settings(env, client_id), **real_time_backoffs(env)}

    def _txn_config(self, env: RunEnv, client_id: str) -> dict:
        return {**txn_settings(env, client_id), **real_time_backoffs(env)}

    # -- consumer steps -----------------------------------------------------------------------------
    def _join_group_held(self, step: Operation, env: RunEnv) -> Outcome:
        """The async face's operation in real time: the first member (client id SILENT_MEMBER,
        whose heartbeats the scenario's rule black-holes, on the emulator or through the proxy in
        front of Kafka) joins and stays open but silent; the second member's wait for its
        assignment is timed, bounded by the step's (scaled) timeout."""
        group, topic = step.args.get("group", "held"), step.args.get("topic", "t")
        limit = step.timeout_s or 60.0
        first = self._consumer(env, self._group_config(env, group, SILENT_MEMBER))
        try:
            first.subscribe([topic])
            give_up = env.clock() + limit
            while not first.assignment() and env.clock() < give_up:
                first.poll(0.05)
            if not first.assignment():
                return Outcome("join_group_held", False, 0.0, "TimeoutException", "the first member never got an assignment")
            second = self._consumer(env, self._group_config(env, group, env.client_id))
            try:
                second.subscribe([topic])
                start = env.clock()
                while not second.assignment() and env.clock() - start < limit:
                    second.poll(0.05)
                ok = bool(second.assignment())
                return Outcome("join_group_held", ok, env.clock() - start, None if ok else "TimeoutException",
                               None if ok else "the second member never got an assignment")
            finally:
                second.close(1.0)
        finally:
            first.close(1.0)

    def _consumer_step(self, step: Operation, env: RunEnv) -> Outcome:
        """One consumer call on a fresh blocking ``client.Consumer`` (the application thread
        waits on the network thread; timeouts in seconds, already scaled)."""
        config = self._group_config(env, step.args.get("group", "cg"))
        if config.get("request.timeout.ms", 30000) <= config.get("fetch.max.wait.ms", 500):
            config["fetch.max.wait.ms"] = max(1, int(config.get("request.timeout.ms", 30000)) // 2)
        tp = (step.args.get("topic", "t"), step.args.get("partition", 0))
        t = step.timeout_s
        calls = _blocking_calls(step, tp, t)
        consumer = self._consumer(env, config)
        try:
            if step.kind == "admin_list_topics":   # our client has no admin call for it: the consumer's
                return list_rounds(step, env, lambda: consumer.list_topics(timeout=step.timeout_s), error_name)
            consumer.assign([tp])
            if step.kind == "close":
                # long enough (real time) to connect and have the black-holed Fetch in flight
                consumer.poll(max(step.args.get("poll_first_s", 0.2) / env.scale, 0.3))
                start = env.clock()
                consumer.close(t)
                return Outcome("close", True, env.clock() - start)
            if step.args.get("warm_up") and step.kind in CONSUMER_CALLS:
                try:
                    _blocking_calls(step, tp, warm_step(step, env).timeout_s)[step.kind](consumer)
                except KafkaError as exc:
                    return Outcome(step.kind, False, 0.0, type(exc).__name__, f"the warm-up call failed: {exc}")
            start = env.clock()
            try:
                got = calls[step.kind](consumer)
                return Outcome(step.kind, True, env.clock() - start, value=short(got))
            except KafkaError as exc:
                return Outcome(step.kind, False, env.clock() - start, error_name(exc), str(exc))
        finally:
            consumer.close(1.0)

    # -- producer steps -----------------------------------------------------------------------------
    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        with self._producer(env, self._producer_config(env)) as producer:
            if step.args.get("warm_up", True):   # time the sends, not the first metadata
                producer.partitions_for(step.args["topic"])
            start = env.clock()
            try:
                meta = None
                for _ in range(step.args.get("count", 1)):
                    meta = producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")).result()
                return Outcome("produce", True, env.clock() - start, value=meta.offset if meta else None)
            except KafkaError as exc:
                return Outcome("produce", False, env.clock() - start, error_name(exc), str(exc))

    def _produce_pipelined(self, step: Operation, env: RunEnv) -> Outcome:
        """``count`` records sent back to back, each its own batch (linger.ms=0; the next one sent
        while the first is in flight, on the same connection), then all awaited."""
        with self._producer(env, self._producer_config(env)) as producer:
            producer.partitions_for(step.args["topic"])
            start = env.clock()
            futures = []
            for _ in range(step.args.get("count", 2)):
                futures.append(producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")))
                time.sleep(max(step.args.get("gap_s", 0.01) / env.scale, MIN_GAP_S))
            try:
                offsets = [f.result().offset for f in futures]
                return Outcome("produce_pipelined", True, env.clock() - start, value=offsets)
            except KafkaError as exc:
                return Outcome("produce_pipelined", False, env.clock() - start, error_name(exc), str(exc))

    def _configure_producer(self, step: Operation, env: RunEnv) -> Outcome:
        """``client.Producer(config)``: a refused config raises on the caller's thread."""
        from client import Producer

        return configure_producer(env, Producer)

    # -- transactions (the async face's steps, ours.py) ---------------------------------------------
    def _transaction(self, step: Operation, env: RunEnv) -> Outcome:
        """init_transactions, one record, ``open_s`` (scaled) open, commit_transaction; ``count``
        of them back to back. Timed: the call that failed, else the last commit; ``retry_commit``:
        after a TimeoutException the commit is called again (it completes the same transaction)."""
        with self._producer(env, self._txn_config(env, env.client_id)) as producer:
            start = env.clock()
            try:
                producer.init_transactions()
                for _ in range(step.args.get("count", 1)):   # back to back: the next begins while markers may be pending
                    producer.begin_transaction()
                    producer.send(step.args["topic"], b"txn", partition=step.args.get("partition")).result()
                    time.sleep(step.args.get("open_s", 0.0) / env.scale)
                    start = env.clock()
                    producer.commit_transaction()
                return Outcome("transaction", True, env.clock() - start)
            except KafkaError as exc:
                elapsed = env.clock() - start
                again = error_name(exc) == "TimeoutException" and bool(step.args.get("retry_commit"))
                if again:
                    producer.commit_transaction(timeout=RETRIED_COMMIT_S)
                return transaction_failed(exc, elapsed, again)

    def _txn_abort_then_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction whose one record (txn-1) fails is aborted; the next writes txn-2 and
        commits. Timed: from the abort to the commit; the value is how the first record ended."""
        topic, partition = step.args["topic"], step.args.get("partition")
        with self._producer(env, self._txn_config(env, env.client_id)) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            first: str | None = None
            try:
                producer.send(topic, b"txn-1", partition=partition).result()
            except KafkaError as exc:
                first = error_name(exc)
            start = env.clock()
            try:
                producer.abort_transaction()
                producer.begin_transaction()
                producer.send(topic, b"txn-2", partition=partition).result()
                producer.commit_transaction()
            except KafkaError as exc:
                return Outcome("txn_abort_then_commit", False, env.clock() - start, error_name(exc), str(exc), value=first)
            return Outcome("txn_abort_then_commit", True, env.clock() - start, value=first)

    def _txn_error_probe(self, step: Operation, env: RunEnv) -> Outcome:
        """The probe of conformance/adapters/txn_probe.py on the blocking face (clear_s scaled)."""
        topic, partition = step.args["topic"], step.args.get("partition")
        with self._producer(env, self._txn_config(env, env.client_id)) as producer:
            calls = {"init": producer.init_transactions, "begin": producer.begin_transaction,
                     "send": lambda: producer.send(topic, b"txn", partition=partition).result(),
                     "commit": producer.commit_transaction, "abort": producer.abort_transaction}
            return txn_probe.run(calls, error_name, env.clock, time.sleep, step.args["clear_s"] / env.scale)

    def _txn_zombie(self, step: Operation, env: RunEnv) -> Outcome:
        """A producer opens a transaction; a new instance with the same transactional.id starts
        (a restart) and commits its own; the old one's commit is timed and must be fenced."""
        topic, partition = step.args["topic"], step.args.get("partition")
        with self._producer(env, self._txn_config(env, env.client_id)) as zombie, \
                self._producer(env, self._txn_config(env, f"{env.client_id}-new")) as fresh:
            zombie.init_transactions()
            zombie.begin_transaction()
            zombie.send(topic, b"zombie", partition=partition).result()
            fresh.init_transactions()
            fresh.begin_transaction()
            fresh.send(topic, b"fresh", partition=partition).result()
            fresh.commit_transaction()
            start = env.clock()
            try:
                zombie.commit_transaction()
                return Outcome("txn_zombie", True, env.clock() - start)
            except KafkaError as exc:
                return Outcome("txn_zombie", False, env.clock() - start, type(exc).__name__, str(exc))

    def _read_committed_behind_open_txn(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction is left open (its producer hangs); a plain record follows it. A
        read_committed consumer polls until it sees a record: timed, the wait for that."""
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        plain = {**plain_producer_settings(env, f"{env.client_id}-plain"), **real_time_backoffs(env)}
        with self._producer(env, self._txn_config(env, f"{env.client_id}-hung")) as hung, self._producer(env, plain) as other, \
                self._consumer(env, {**self._group_config(env, None), "isolation.level": "read_committed"}) as consumer:
            hung.init_transactions()
            hung.begin_transaction()
            hung.send(topic, b"in the open transaction", partition=partition).result()
            other.send(topic, b"after it", partition=partition).result()
            consumer.assign([(topic, partition)])
            start, seen = env.clock(), list[Any]()
            while not seen and env.clock() - start < (step.timeout_s or 60.0):
                seen = [r.value for r in consumer.poll(0.05)]
            return first_visible("read_committed_behind_open_txn", seen, env.clock() - start)


def _blocking_calls(step: Operation, tp: tuple[str, int], t: float | None) -> dict[str, Callable[[Any], Any]]:
    """The blocking consumer's call for each step kind, with deadline ``t`` (seconds; None: its
    default.api.timeout.ms)."""
    return {
        "poll": lambda c: c.poll(t or 0.0),
        "committed": lambda c: c.committed([tp], timeout=t),
        "position": lambda c: c.position(tp, timeout=t),
        "end_offsets": lambda c: c.end_offsets([tp], timeout=t),
        "beginning_offsets": lambda c: c.beginning_offsets([tp], timeout=t),
        "offsets_for_times": lambda c: c.offsets_for_times({tp: step.args.get("timestamp_ms", 0)}, timeout=t),
        "list_topics": lambda c: c.list_topics(timeout=t),
        "partitions_for": lambda c: c.partitions_for(tp[0], timeout=t),
        "commit_sync": lambda c: c.commit_sync({tp: step.args.get("offset", 0)}, timeout=t),
    }
