"""The blocking faces' two threads (the consumer timeout design's, made safe), shared by the
classic consumer (``client.consumer.blocking.Consumer``) and the share consumer
(``client.share.blocking.ShareConsumer``).

The application thread posts each call as an *event* carrying an absolute deadline to the
network thread (trio) and waits on its future. On the network thread the call runs with its own
deadline (attempt-then-check), and a *reaper* completes any event still pending after its
deadline with a TimeoutException, but only after at least one network poll has run since the
deadline passed (as Kafka's CompletableEventReaper, run after the I/O of each cycle; ours sleeps
until the next event is due, then gives it one more network cycle). Beyond Kafka: the application
thread watches the network thread, so if that thread has died or stopped polling, the call fails
promptly with a clear error instead of waiting forever. Rebalance callbacks travel the other way
(client/consumer/app_callbacks.py): the network thread queues them, and the application thread
runs them inside the calls that ask for them.

A face gives ``_open()``, the async consumer it serves as an async context manager, and
``_check_config``, run on the caller's thread so a bad config is refused there.
"""

from __future__ import annotations

import concurrent.futures
import math
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import trio

from client.consumer.app_callbacks import AppThreadCallbacks
from client.errors import TimeoutException
from client.exceptions import NetworkThreadDied
from client.network import Connect
from kafka_common.trio_thread import TrioThread
from kafka_common.wakeup import Wakeup

WATCHDOG_S = 0.1      # how often a waiting application thread checks the network thread
STALL_S = 5.0         # a network thread that has not polled for this long is declared stuck
REAPER_GRACE_S = 0.05  # the reaper's margin over a call's own deadline handling
REAPER_CYCLE_S = 0.01  # an overdue event expires this long after it is first seen overdue (a network cycle)


@dataclass
class _Event:
    name: str
    deadline: float                       # network-thread time
    future: concurrent.futures.Future
    polled_after_deadline: bool = False
    reap_at: float = 0.0                  # when the reaper next looks at it

    def __post_init__(self) -> None:
        self.reap_at = self.deadline + REAPER_GRACE_S


class NetworkThreadFace:
    THREAD_NAME = "broker-emu-consumer-network"

    def __init__(self, config: dict[str, Any], connect: Connect | None = None):
        self.config = self._check_config(config)   # refused here, on the caller's thread, if invalid
        self._given = dict(config)               # the network thread parses what the user gave, not the defaults
        self._connect = connect
        self._events: list[_Event] = []
        self._error: BaseException | None = None
        self.last_poll = 0.0                 # network-thread time of its last heartbeat (reaper cycle or probe)
        self._poll_counter = 0
        self._reaper_wake = Wakeup()
        self._callbacks = AppThreadCallbacks()   # rebalance callbacks for the application thread
        self._runner = TrioThread(self.THREAD_NAME, self._run, self._exited)
        self._runner.start()
        if self._error is not None:
            raise self._error

    # -- network thread ----------------------------------------------------------------------
    def _exited(self, error: BaseException | None) -> None:
        if error is not None:
            self._error = NetworkThreadDied(f"the consumer's network thread died: {error!r}")
        for ev in self._events:
            if not ev.future.done():
                ev.future.set_exception(self._error or NetworkThreadDied("the consumer is closed"))

    def _check_config(self, config: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _open(self) -> AbstractAsyncContextManager[Any]:
        """The async consumer this face serves, opened on the network thread."""
        raise NotImplementedError

    async def _run(self) -> None:
        async with self._open() as consumer:
            self._consumer: Any = consumer
            async with trio.open_nursery() as self._nursery:
                self._nursery.start_soon(self._reaper)
                await self._runner.until_stopped()
                self._nursery.cancel_scope.cancel()

    async def _reaper(self) -> None:
        """Expire events whose deadline has passed, once a network cycle has run after that
        deadline (attempt-then-check, on the thread side). Sleeps until the next event is due or
        a new one is posted."""
        while True:
            self._reaper_wake.new_cycle()
            now = trio.current_time()
            self._polled()
            for ev in list(self._events):
                if ev.future.done():
                    self._events.remove(ev)
                elif now >= ev.reap_at:
                    if ev.polled_after_deadline:
                        ev.future.set_exception(TimeoutException(
                            f"{ev.name} expired in the reaper: its deadline passed on the network thread"))
                        self._events.remove(ev)
                    else:
                        ev.polled_after_deadline, ev.reap_at = True, now + REAPER_CYCLE_S
            await self._reaper_wake.sleep_until(min((ev.reap_at for ev in self._events), default=math.inf))

    def _polled(self) -> None:
        """The network thread is running its tasks: the watchdog's heartbeat."""
        self.last_poll, self._poll_counter = trio.current_time(), self._poll_counter + 1

    # -- application thread ------------------------------------------------------------------
    def _call(self, name: str, timeout: float | None, make: Callable[[Any, float | None], Awaitable[Any]],
              callbacks: bool = False) -> Any:
        """Post the call to the network thread and wait for its outcome; ``callbacks``: run the
        rebalance callbacks the group queues meanwhile (poll, close, unsubscribe)."""
        self._check_alive()
        budget = self.config["default.api.timeout.ms"] / 1000 if timeout is None else max(timeout, 0.0)
        future: concurrent.futures.Future = concurrent.futures.Future()

        async def post() -> None:
            ev = _Event(name, trio.current_time() + budget, future)
            self._events.append(ev)
            self._reaper_wake.set()

            async def work() -> None:
                try:
                    result = await make(self._consumer, budget)
                except trio.Cancelled:  # the network thread is being torn down
                    if not future.done():
                        future.set_exception(NetworkThreadDied(f"{name}: the consumer's network thread stopped"))
                    raise
                except BaseException as exc:  # delivered to the caller through the future
                    if not future.done():
                        future.set_exception(exc)
                    return
                if not future.done():
                    future.set_result(result)

            try:
                self._nursery.start_soon(work)
            except RuntimeError:  # the network thread is shutting down (crashed or closing)
                self._events.remove(ev)
                raise NetworkThreadDied(f"{name}: the consumer's network thread is shutting down") from None

        try:
            self._runner.run(post)
        except (trio.RunFinishedError, trio.Cancelled):  # the network thread is going away
            raise NetworkThreadDied(f"{name}: the consumer's network thread stopped") from None
        return self._wait(future, name, callbacks)

    def _wait(self, future: concurrent.futures.Future, name: str, callbacks: bool = False) -> Any:
        """Wait for the call's outcome, watching the network thread (dead, or not polling for
        STALL_S); with ``callbacks``, run the queued rebalance callbacks here meanwhile, and raise
        the first error one raised once the call is done."""
        future.add_done_callback(self._callbacks.notify)
        polls_seen, progress = self._poll_counter, time.monotonic()
        error: BaseException | None = None
        self._probe()
        while True:
            if callbacks:
                ran, failed = self._callbacks.run_pending()
                error = error or failed
                if ran:   # this thread was busy in the application's code, the network thread was not stuck
                    polls_seen, progress = self._poll_counter, time.monotonic()
                    self._probe()
            if future.done():
                result = future.result()
                if error is not None:
                    raise error
                return result
            self._callbacks.wait(future, WATCHDOG_S, callbacks)
            if not self._runner.is_alive():
                raise self._error or NetworkThreadDied(f"{name}: the consumer's network thread is gone")
            if self._poll_counter != polls_seen:
                polls_seen, progress = self._poll_counter, time.monotonic()
            elif time.monotonic() - progress >= STALL_S:
                raise NetworkThreadDied(f"{name}: the consumer's network thread has not polled for "
                                        f"{time.monotonic() - progress:.1f} s")
            self._probe()

    def _probe(self) -> None:
        """Ask the network thread for a heartbeat (``_polled``): a thread stuck in a callback never
        runs it. The reaper sleeps to its next deadline, so it is no heartbeat of its own."""
        try:
            self._runner.run_sync_soon(self._polled)
        except trio.RunFinishedError:
            pass   # the watchdog sees the thread gone

    def _check_alive(self) -> None:
        if self._error is not None:
            raise self._error
        if not self._runner.is_alive():
            raise NetworkThreadDied("the consumer's network thread is not running (closed or crashed)")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, timeout: float | None = None) -> None:
        raise NotImplementedError


async def _sync(fn, *args):
    return fn(*args)
