"""The nursery a running cluster's own tasks live in (in-memory connections, a broker stopped
from synchronous code, a restarted broker's listener): ``open_cluster`` binds it."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import trio


class ClusterTasks:
    def __init__(self) -> None:
        self._nursery: trio.Nursery | None = None

    def bind(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

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
