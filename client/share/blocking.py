"""The blocking share consumer: ``ShareConsumer``, the share consumer's API on the two threads of
``client.consumer.network_thread``. Each call is posted to the network thread with its deadline
and run there by ``AsyncShareConsumer`` under the same rules (poll returns at its deadline,
commit_sync raises TimeoutException at its deadline, close never raises one); the network thread
never runs the application's code: a ``commit_async`` callback is queued there and run on the
application thread by its next ``poll``, ``commit_sync``, ``commit_async`` or ``close`` (as Java's
``handleCompletedAcknowledgements``). A call whose network thread died or stalled fails promptly.

    with ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "sg"}) as c:
        c.subscribe(["orders"])
        for record in c.poll(2.0):
            print(record.value, record.delivery_count)
"""

from __future__ import annotations

import queue
from contextlib import AbstractAsyncContextManager
from typing import Any

from client.consumer.network_thread import NetworkThreadFace, _sync
from client.consumer.records import TopicPartition
from client.errors import TimeoutException
from client.exceptions import NetworkThreadDied
from client.network import Connect
from client.share.acknowledgements import AcknowledgeType, ShareRecord
from client.share.config import share_consumer_config
from client.share.consumer import AckCallback, AsyncShareConsumer, CommitCallback, open_share_consumer
from client.share.fetcher import Results


class ShareConsumer(NetworkThreadFace):
    THREAD_NAME = "broker-emu-share-consumer-network"
    _consumer: AsyncShareConsumer

    def __init__(self, config: dict[str, Any], connect: Connect | None = None):
        self.close_report: list[str] = []    # what close could not do, in words
        super().__init__(config, connect)

    def _check_config(self, config: dict[str, Any]) -> dict[str, Any]:
        return share_consumer_config(config)

    def _open(self) -> AbstractAsyncContextManager[AsyncShareConsumer]:
        self._completed: queue.SimpleQueue = queue.SimpleQueue()   # (callback, results, error) for this thread
        return open_share_consumer(self._given, self._connect)

    def _run_completed(self) -> None:
        """The commit_async callbacks whose acknowledgements were answered, on this thread."""
        while True:
            try:
                callback, results, error = self._completed.get_nowait()
            except queue.Empty:
                return
            callback(results, error)

    def subscribe(self, topics: list[str]) -> None:
        self._call("subscribe()", 5.0, lambda c, t: _sync(c.subscribe, list(topics)))

    def unsubscribe(self, timeout: float | None = None) -> list[str]:
        return self._call("unsubscribe()", timeout, lambda c, t: c.unsubscribe(t))

    def subscription(self) -> list[str]:
        return self._call("subscription()", 5.0, lambda c, t: _sync(c.subscription))

    def assignment(self) -> list[TopicPartition]:
        return self._call("assignment()", 5.0, lambda c, t: _sync(c.assignment))

    def poll(self, timeout: float = 0.0) -> list[ShareRecord]:
        self._run_completed()
        records = self._call("poll()", timeout, lambda c, t: c.poll(timeout))
        self._run_completed()
        return records

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        self._call("acknowledge()", 5.0, lambda c, t: _sync(c.acknowledge, record, type))

    def commit_sync(self, timeout: float | None = None) -> Results:
        self._run_completed()
        try:
            return self._call("commit_sync()", timeout, lambda c, t: c.commit_sync(t))
        finally:
            self._run_completed()

    def commit_async(self, callback: AckCallback | None = None) -> None:
        """``callback(results, error)`` runs on this thread, in a later call, once answered."""
        self._run_completed()
        queued = None if callback is None else (lambda results, error: self._completed.put((callback, results, error)))
        self._call("commit_async()", 5.0, lambda c, t: _sync(c.commit_async, queued))

    def set_acknowledgement_commit_callback(self, callback: CommitCallback | None) -> None:
        """``callback(offsets, error)`` for every acknowledgement answered, run on this thread by
        its next ``poll``, ``commit_sync``, ``commit_async`` or ``close`` (Java's AcknowledgementCommitCallback)."""
        queued = None if callback is None else (lambda offsets, error: self._completed.put((callback, offsets, error)))
        self._call("set_acknowledgement_commit_callback()", 5.0,
                   lambda c, t: _sync(c.set_acknowledgement_commit_callback, queued))

    def acquisition_lock_timeout_ms(self) -> int | None:
        return self._call("acquisition_lock_timeout_ms()", 5.0, lambda c, t: _sync(c.acquisition_lock_timeout_ms))

    def wakeup(self) -> None:
        self._check_alive()
        self._runner.run_sync(lambda: self._consumer.wakeup())

    def close(self, timeout: float | None = None) -> None:
        """Sends what is acknowledged, closes the share sessions and leaves within ``timeout``
        (default 30 s); never raises a timeout. What it could not do is in ``close_report``."""
        if self._runner.is_alive() and self._runner.token is not None:
            try:
                self.close_report = self._call("close()", 30.0 if timeout is None else timeout,
                                               lambda c, t: c.aclose(t))
            except (NetworkThreadDied, TimeoutException) as exc:
                self.close_report = [str(exc)]
            finally:
                self._runner.stop(join_timeout=5)
                self._run_completed()

    def __enter__(self) -> ShareConsumer:
        return self
