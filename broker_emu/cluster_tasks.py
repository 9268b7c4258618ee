"""The nursery a running cluster's own tasks live in (in-memory connections, a broker stopped
from synchronous code, a restarted broker's listener): ``open_cluster`` binds it, with the two
ways into the request pipeline a running cluster opens itself — a listener for a restarted
broker and an in-memory connection. They are handed in rather than imported because the
pipeline (listeners, server, handlers) sits above the cluster and names its type."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import trio


class ClusterTasks:
    def __init__(self) -> None:
        self._nursery: trio.Nursery | None = None
        self.listen: Callable[..., Awaitable[Any]] | None = None   # broker_emu.listeners.serve_broker
        self._connect: Callable[..., trio.abc.Stream] | None = None  # broker_emu.listeners.connect_in_memory

    def bind(self, nursery: trio.Nursery, listen: Callable[..., Awaitable[Any]] | None = None,
             connect: Callable[..., trio.abc.Stream] | None = None) -> None:
        self._nursery, self.listen, self._connect = nursery, listen, connect

    def connect(self, *args: Any) -> trio.abc.Stream:
        if self._connect is None:
            raise RuntimeError("in-memory connections need a running cluster (open_cluster)")
        return self._connect(*args)

    @property
    def running(self) -> bool:
        return self._nursery is not None

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, why: str = "the cluster is not running") -> None:
        """Run ``fn(*args)`` in the cluster's nursery; RuntimeError(``why``) when it is not running."""
        if self._nursery is None:
            raise RuntimeError(why)
        self._nursery.start_soon(fn, *args)

    async def start(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """``nursery.start``: wait until ``fn`` says it has started."""
        if self._nursery is None:
            raise RuntimeError("the cluster is not running")
        return await self._nursery.start(fn, *args)
