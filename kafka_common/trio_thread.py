"""One trio run on a daemon thread: the network thread of the client's blocking faces
(``client.Producer``, ``client.Consumer``, ``client.Admin``) and the emulator's
``broker_emu.runtime.ThreadedCluster`` (a cluster or proxy for blocking code).

The owner gives an async ``body``; the body sets up what it serves and then awaits
``until_stopped()``, which tells the starting thread it is ready and waits for ``stop()``.
``start()`` returns once the body is ready or the run has ended; ``on_exit(error)`` runs on the
network thread when the run ends (``error`` is what ended it, or None), before ``start()``
returns, so the owner can record the error and fail whatever is still pending.

It lives in ``kafka_common`` because the emulator may import only ``client.protocol`` and
``client.errors`` (docs/architecture.md), and a thread runner belongs in neither the codec nor
the error table.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import trio


class TrioThread:
    __slots__ = ("_body", "_on_exit", "_ready", "_stop", "_thread", "token")

    def __init__(self, name: str, body: Callable[[], Awaitable[None]],
                 on_exit: Callable[[BaseException | None], None]):
        self._body, self._on_exit = body, on_exit
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _main(self) -> None:
        error: BaseException | None = None
        try:
            trio.run(self._run)
        except BaseException as exc:  # noqa: BLE001 - handed to the owner, who reports it to later calls
            error = exc
        finally:
            self._on_exit(error)
            self._ready.set()

    async def _run(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        await self._body()

    async def until_stopped(self) -> None:
        """In the body: the thread is ready; wait for ``stop()``."""
        assert self._stop is not None
        self._ready.set()
        await self._stop.wait()

    # -- from other threads ------------------------------------------------------------------
    def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``afn(*args)`` on the trio thread and return its result (raises
        trio.RunFinishedError if the run has ended)."""
        return trio.from_thread.run(afn, *args, trio_token=self.token)

    def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run_sync(fn, *args, trio_token=self.token)

    def run_sync_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule ``fn(*args)`` without waiting (raises trio.RunFinishedError once the run
        has ended)."""
        assert self.token is not None
        self.token.run_sync_soon(fn, *args)

    def stop(self, join_timeout: float = 5.0) -> None:
        """Ask the body to return from ``until_stopped()`` and wait for the thread to end."""
        if self._thread.is_alive() and self.token is not None and self._stop is not None:
            try:
                self.run_sync(self._stop.set)
            except (trio.RunFinishedError, trio.Cancelled):
                pass
        if self._thread.ident is not None:
            self._thread.join(timeout=join_timeout)
