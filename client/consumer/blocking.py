"""The blocking consumer: ``Consumer``, the classic consumer's API on the two threads of
``client.consumer.network_thread`` (calls posted to the network thread with their deadlines, a
reaper, a watchdog on the network thread).

Rebalance callbacks travel the other way (client/consumer/app_callbacks.py): the network thread
queues them, and the application thread runs them inside ``poll``, ``close`` and ``unsubscribe``,
as Java's AsyncKafkaConsumer does; a slow callback never stops the heartbeats.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Callable

from client.config import consumer_config
from client.consumer.async_consumer import AsyncConsumer, open_consumer
from client.consumer.network_thread import NetworkThreadFace, _sync
from client.consumer.records import TopicPartition
from client.errors import TimeoutException
from client.exceptions import NetworkThreadDied


class Consumer(NetworkThreadFace):
    _consumer: AsyncConsumer

    def _check_config(self, config: dict[str, Any]) -> dict[str, Any]:
        return consumer_config(config)

    def _open(self) -> AbstractAsyncContextManager[AsyncConsumer]:
        return open_consumer(self._given, self._connect, run_callback=self._callbacks.run)

    # -- the API -------------------------------------------------------------------------------
    def assign(self, partitions) -> None:
        self._call("assign()", 5.0, lambda c, t: _sync(c.assign, [TopicPartition(*p) for p in partitions]))

    def subscribe(self, topics: list[str] | None = None, pattern: str | None = None,
                  on_assign: Callable[[list[TopicPartition]], Any] | None = None,
                  on_revoke: Callable[[list[TopicPartition]], Any] | None = None) -> None:
        """Join the group for these topics (or a pattern). The rebalance callbacks run on the
        thread that calls ``poll`` (or ``close``, ``unsubscribe``), inside that call: the group
        waits for them, its heartbeats do not."""
        self._call("subscribe()", 5.0, lambda c, t: _sync(c.subscribe, topics, pattern, on_assign, on_revoke))

    def unsubscribe(self) -> None:
        self._call("unsubscribe()", None, lambda c, t: c.unsubscribe(), callbacks=True)

    def assignment(self) -> list[TopicPartition]:
        return self._call("assignment()", 5.0, lambda c, t: _sync(c.assignment))

    def poll(self, timeout: float = 0.0):
        return self._call("poll()", timeout, lambda c, t: c.poll(timeout), callbacks=True)

    def wakeup(self) -> None:
        """Interrupt a poll running on another thread (it raises WakeupException); thread-safe."""
        self._check_alive()
        self._runner.run_sync(lambda: self._consumer.wakeup())

    def seek(self, tp, offset: int) -> None:
        self._call("seek()", 5.0, lambda c, t: _sync(c.seek, TopicPartition(*tp), offset))

    def seek_to_beginning(self, partitions=None) -> None:
        self._call("seek_to_beginning()", 5.0, lambda c, t: _sync(c.seek_to_beginning, partitions))

    def seek_to_end(self, partitions=None) -> None:
        self._call("seek_to_end()", 5.0, lambda c, t: _sync(c.seek_to_end, partitions))

    def pause(self, partitions) -> None:
        self._call("pause()", 5.0, lambda c, t: _sync(c.pause, partitions))

    def resume(self, partitions) -> None:
        self._call("resume()", 5.0, lambda c, t: _sync(c.resume, partitions))

    def commit_async(self, offsets=None, callback=None) -> None:
        """The callback runs on the network thread when the commit ends."""
        self._call("commit_async()", 5.0, lambda c, t: _sync(c.commit_async, offsets, callback))

    def list_topics(self, timeout: float | None = None) -> dict:
        return self._call("list_topics()", timeout, lambda c, t: c.list_topics(t))

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        return self._call("partitions_for()", timeout, lambda c, t: c.partitions_for(topic, t))

    def offsets_for_times(self, partitions_to_ts: dict, timeout: float | None = None) -> dict:
        return self._call("offsets_for_times()", timeout, lambda c, t: c.offsets_for_times(partitions_to_ts, t))

    def client_instance_id(self, timeout: float | None = None):
        return self._call("client_instance_id()", timeout, lambda c, t: c.client_instance_id(t))

    def committed(self, partitions, timeout: float | None = None) -> dict:
        return self._call("committed()", timeout, lambda c, t: c.committed(partitions, t))

    def commit_sync(self, offsets=None, timeout: float | None = None) -> None:
        return self._call("commit_sync()", timeout, lambda c, t: c.commit_sync(offsets, t))

    def position(self, tp, timeout: float | None = None) -> int:
        return self._call("position()", timeout, lambda c, t: c.position(tp, t))

    def end_offsets(self, partitions, timeout: float | None = None) -> dict:
        return self._call("end_offsets()", timeout, lambda c, t: c.end_offsets(partitions, t))

    def beginning_offsets(self, partitions, timeout: float | None = None) -> dict:
        return self._call("beginning_offsets()", timeout, lambda c, t: c.beginning_offsets(partitions, t))

    def close(self, timeout: float | None = None) -> None:
        """Never raises a timeout: lets long polls finish within ``timeout``, then forces itself
        closed. The last revocation's callback runs here; an exception from it is raised once closed."""
        if self._runner.is_alive() and self._runner.token is not None:
            try:
                self._call("close()", timeout if timeout is not None else 30.0, lambda c, t: c.aclose(t), callbacks=True)
            except (NetworkThreadDied, TimeoutException):
                pass
            finally:
                self._runner.stop(join_timeout=5)

