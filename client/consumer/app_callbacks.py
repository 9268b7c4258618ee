"""The blocking consumer's rebalance callbacks, run on the application thread.

As Apache Kafka's AsyncKafkaConsumer does it: the network thread runs the group protocol and is
never blocked by the application's code. When the group needs a callback (``on_revoke`` before
it gives partitions up, ``on_assign`` once it has taken new ones) the group's task queues it as
an event for the application thread and waits until it is done — that task only: heartbeats,
fetches and commits go on beside it (KIP-848: the reconciliation has a task of its own; Java's
background thread heartbeats while the application runs its ConsumerRebalanceListener). The
application thread runs what is queued inside ``poll``, and inside ``close`` and ``unsubscribe``,
whose own work waits for the revocation (Java's AsyncKafkaConsumer.processBackgroundEvents), in
order, one at a time. So a member whose application stops polling, or whose callback is slow,
keeps heartbeating while its reconciliation waits, and the broker fences it at its rebalance
timeout (max.poll.interval.ms) rather than at its session timeout.

An exception from a callback is raised from the call that ran it, once that call's own work is
done; the group carries on as if the callback had returned (Java's ConsumerRebalanceListenerInvoker
reports it, and poll throws it).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections import deque
from typing import Any

import trio

from client.consumer.group import Callback
from client.consumer.records import TopicPartition

QUEUED, RUNNING, DONE, DROPPED = "queued", "running", "done", "dropped"


class _Pending:
    __slots__ = ("callback", "done", "state", "tps")

    def __init__(self, callback: Callback, tps: list[TopicPartition], done: trio.Event):
        self.callback, self.tps, self.done = callback, tps, done
        self.state = QUEUED


class AppThreadCallbacks:
    """The queue between the two threads: ``run`` on the network thread (a ``RunCallback`` for
    the group), ``run_pending`` and ``wait`` on the application thread."""

    def __init__(self) -> None:
        self._queue: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._token: trio.lowlevel.TrioToken | None = None

    # -- the network thread ----------------------------------------------------------------------
    async def run(self, callback: Callback | None, tps: list[TopicPartition]) -> None:
        """Queue ``callback(tps)`` for the application thread and wait until it has run. If this
        task is cancelled first (the consumer closing), a callback not yet started never runs."""
        if callback is None:
            return
        self._token = trio.lowlevel.current_trio_token()
        item = _Pending(callback, list(tps), trio.Event())
        with self._cond:
            self._queue.append(item)
            self._cond.notify_all()
        try:
            await item.done.wait()
        finally:
            with self._cond:
                if item.state == QUEUED:
                    self._queue.remove(item)
                    item.state = DROPPED

    # -- the application thread ------------------------------------------------------------------
    def run_pending(self) -> tuple[bool, BaseException | None]:
        """Run every queued callback, in order, here. Returns whether any ran, and the first
        exception one of them raised (the others still run)."""
        ran, first = False, None
        while True:
            with self._cond:
                if not self._queue:
                    return ran, first
                item = self._queue.popleft()
                item.state = RUNNING
            ran = True
            try:
                item.callback(item.tps)
            except Exception as exc:  # noqa: BLE001 - the application's own error, raised from its call
                first = first or exc
            finally:
                self._finish(item)

    def _finish(self, item: _Pending) -> None:
        item.state = DONE
        if self._token is not None:
            try:
                self._token.run_sync_soon(item.done.set)
            except trio.RunFinishedError:
                pass   # the network thread has ended: nothing waits for it any more

    def wait(self, future: concurrent.futures.Future, timeout: float, callbacks: bool) -> None:
        """Block until ``future`` is done or, with ``callbacks``, a callback is queued; at most
        ``timeout`` seconds. (``future`` must notify: ``future.add_done_callback(self.notify)``.)"""
        with self._cond:
            if not future.done() and not (callbacks and self._queue):
                self._cond.wait(timeout)

    def notify(self, *_: Any) -> None:
        with self._cond:
            self._cond.notify_all()
