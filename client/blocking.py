"""The blocking face: ``Producer(config)`` for ordinary Python code.

A network thread runs trio and the async producer; the application thread posts work to it and
waits on ``concurrent.futures.Future``s. The application thread never waits past its deadline:
``send()`` is bounded by max.block.ms (enforced on the network thread), ``flush``/``close`` by
their timeouts, and if the network thread has died every call fails at once with a clear error
instead of waiting forever (the weak spot Kafka's own two-thread design admits).
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Callable, Sequence

import trio

from client.config import producer_config
from client.errors import KafkaError
from client.network import Connect
from client.producer import DeliveryFuture, RecordMetadata, open_producer


class NetworkThreadDied(KafkaError):
    name = "NETWORK_THREAD_DIED"


class Producer:
    def __init__(self, config: dict[str, Any], connect: Connect | None = None):
        producer_config(config)  # a bad config fails here, on the caller's thread, as itself
        self._config, self._connect = dict(config), connect
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self._pending: set[concurrent.futures.Future] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name="broker-emu-producer-network", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    # -- the network thread ------------------------------------------------------------------
    def _main(self) -> None:
        try:
            trio.run(self._run)
        except BaseException as exc:  # reported to every later call
            self._error = exc if isinstance(exc, KafkaError) else NetworkThreadDied(f"the network thread died: {exc!r}")
        finally:
            self._ready.set()
            self._fail_pending()

    async def _run(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with open_producer(self._config, self._connect) as producer:
            self._producer = producer
            async with trio.open_nursery() as self._nursery:
                self._ready.set()
                await self._stop.wait()
                self._nursery.cancel_scope.cancel()

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, set()
        for f in pending:
            if not f.done():
                f.set_exception(self._error or NetworkThreadDied("the producer closed before delivery"))

    def _check_alive(self) -> None:
        if self._error is not None:
            raise self._error
        if not self._thread.is_alive():
            raise NetworkThreadDied("the producer's network thread is not running (closed or crashed)")

    # -- the application thread --------------------------------------------------------------
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
             headers: Sequence[tuple[str, bytes | None]] | None = None, timestamp: int | None = None,
             on_delivery: Callable[[BaseException | None, RecordMetadata | None], None] | None = None
             ) -> "concurrent.futures.Future[RecordMetadata]":
        """Blocks at most max.block.ms (waiting for metadata); returns a Future of the record's
        metadata. ``on_delivery(error, metadata)`` runs on the network thread once."""
        self._check_alive()
        result: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            self._pending.add(result)
        result.add_done_callback(self._forget)

        args = (topic, value, key, partition, headers or (), timestamp)
        if topic in self._producer.partitions:
            # metadata known: hand the record over without waiting for the network thread
            try:
                self._token.run_sync_soon(self._post_nowait, args, result, on_delivery)
            except trio.RunFinishedError:
                raise NetworkThreadDied("the producer's network thread stopped") from None
            return result

        async def post() -> None:
            self._link(await self._producer.send(*args), result, on_delivery)

        try:
            trio.from_thread.run(post, trio_token=self._token)
        except (trio.RunFinishedError, trio.Cancelled):
            raise NetworkThreadDied("the producer's network thread stopped") from None
        except BaseException as exc:
            result.cancel()
            raise exc
        return result

    def _post_nowait(self, args, result: concurrent.futures.Future, on_delivery) -> None:
        try:
            delivery = self._producer.send_nowait(*args)
        except BaseException as exc:  # reported through the future, never lost
            if not result.done():
                result.set_exception(exc)
            return
        self._link(delivery, result, on_delivery)

    def _forget(self, f: concurrent.futures.Future) -> None:
        with self._lock:
            self._pending.discard(f)

    @staticmethod
    def _link(delivery: DeliveryFuture, result: concurrent.futures.Future, callback) -> None:
        def done(d: DeliveryFuture) -> None:
            if d.error is not None:
                if not result.done():
                    result.set_exception(d.error)
                if callback:
                    callback(d.error, None)
                return
            if not result.done():
                result.set_result(d.value)
            if callback:
                callback(None, d.value)

        delivery.add_done_callback(done)

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every sent record is delivered or failed; returns how many are still
        pending when ``timeout`` (seconds) ran out."""
        with self._lock:
            pending = list(self._pending)
        _, not_done = concurrent.futures.wait(pending, timeout=timeout)
        return len(not_done)

    def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` seconds, then stop; undelivered records fail."""
        if self._thread.is_alive():
            self.flush(timeout)
            if self._token is not None and self._stop is not None:
                try:
                    trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
                except trio.RunFinishedError:
                    pass
            self._thread.join(timeout=5)
        self._fail_pending()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
