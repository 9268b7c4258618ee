"""Client histories of our client's blocking face (``client.Producer``, ``client.Consumer``):
the same operations as the async face's recorders (conformance/chaos/history.py), for code that
drives the blocking face — in real time, so give the ``History`` a real clock
(``time.monotonic``). Delivery callbacks run on the client's network thread; ``History`` is
thread-safe."""

from __future__ import annotations

from typing import Any, Callable

from conformance.chaos.history import OK, ConsumerRecording, ProducerRecording


class RecordedBlockingProducer(ProducerRecording):
    """``client.Producer`` with every send, delivery and transaction call recorded."""

    def send(self, topic: str, value: bytes | None, *, key: bytes | None = None, partition: int | None = None,
             on_delivery: Callable[[Any, Any], None] | None = None) -> Any:
        delivered = self._sending(topic, value, key, partition, on_delivery)
        return self.producer.send(topic, value, key=key, partition=partition, on_delivery=delivered)

    def flush(self, timeout: float | None = None) -> int:
        return self.producer.flush(timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        invocation = self._initializing()
        try:
            self.producer.init_transactions(timeout)
        except BaseException as exc:
            self._ended(invocation, exc)
            raise
        self.history.complete(invocation, OK, detail=invocation.detail)

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._end("commit_txn", self.producer.commit_transaction, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._end("abort_txn", self.producer.abort_transaction, timeout)

    def _end(self, f: str, call: Callable[..., Any], timeout: float | None) -> None:
        invocation = self.history.invoke(self.process, f, txn=self.txn)
        try:
            call(timeout)
        except BaseException as exc:
            self._ended(invocation, exc)
            raise
        self._ended(invocation, None)


class RecordedBlockingConsumer(ConsumerRecording):
    """``client.Consumer`` with every assign, seek, poll and commit recorded."""

    def poll(self, timeout: float = 0.0) -> list[Any]:
        invocation = self._polling()
        try:
            records = self.consumer.poll(timeout)
        except BaseException as exc:
            self._polled(invocation, None, exc)
            raise
        self._polled(invocation, records, None)
        return records

    def position(self, tp: Any, timeout: float | None = None) -> int:
        return self.consumer.position(tp, timeout)

    def commit_sync(self, offsets: dict[Any, int], timeout: float | None = None) -> None:
        invocation = self._committing(offsets)
        try:
            self.consumer.commit_sync(offsets, timeout)
        except BaseException as exc:
            self._committed(invocation, exc)
            raise
        self._committed(invocation, None)
