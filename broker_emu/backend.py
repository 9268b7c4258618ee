"""The hooks of the request pipeline: what differs between a connection to the emulated broker
and a connection through the proxy.

``server.Connection`` runs the pipeline for both — frames in, decode, SASL and the version
check, the recv trace, the fault sequence (``faults/apply.py``), the answer, quotas and
throttle, encode, send — and asks its ``Backend`` only what it cannot know itself: which versions
of an API it serves, whether a request it cannot read closes the connection or goes on as bytes,
how a request is answered, and how an answer is encoded and throttled. The broker's backend is
``handler_backend.HandlerBackend`` (the registered handlers, authorization, quotas); the proxy's is
``proxy.forward.UpstreamBackend`` (one upstream connection per client connection).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from client.protocol.codec import RequestHeader
from client.protocol.framing import Frame

if TYPE_CHECKING:
    from broker_emu.context import RequestContext

# an answer ready to send: the frame (size prefix included), its non-zero error codes, and the
# answer's body when the backend has it decoded (None: it is only bytes)
Reply = tuple[bytes, list[int], Any]


class Connection(Protocol):
    """What a backend uses of the connection it answers for (``server.Connection``, which
    imports this module)."""

    def abort(self, reason: str) -> None: ...
    def encode(self, ctx: RequestContext, body: Any, response: Mapping[str, Any]) -> tuple[bytes, list[int]] | None:
        """The answer encoded for the request's version (the error answer when it cannot carry
        it), with its non-zero error codes; None when nothing goes back."""


class Backend(Protocol):
    # a request the pipeline cannot decode (an API or version it does not serve, a body that does
    # not parse) goes to ``answer`` with body None instead of closing the connection
    passes_through: bool
    # the request being answered is listed in ``Connection.inflight`` (the console reads it)
    lists_in_flight: bool

    async def open(self, conn: "Connection", tasks: trio.Nursery) -> bool:
        """Once the connection faults let the connection through: set up what answering needs,
        its tasks in ``tasks`` (they end with the connection). False: ``conn`` was aborted."""

    async def aclose(self) -> None:
        """After the connection closed."""

    def advertised(self, api_key: int) -> tuple[int, int] | None:
        """The versions of ``api_key`` served (those ApiVersions advertises), or None."""

    def answers_at_once(self, frame: Frame) -> bool:
        """Whether this request's answer never waits (then the reader may answer it itself);
        asked only when no fault rule is set and nothing is ahead of it on the connection."""

    async def answer(self, ctx: "RequestContext", header: RequestHeader, body: Any, frame: Frame) -> Any:
        """The answer to a request, in the backend's own form (what ``encode`` takes), or None
        when none goes back (an acks=0 Produce). Raises ``handlers.CloseConnection`` to close
        the connection instead."""

    async def late_answer(self, ctx: "RequestContext", header: RequestHeader, body: Any, frame: Frame) -> Any:
        """``answer`` for a held request whose client has gone (the ``hold`` fault): the
        request is still handled, as Kafka handles a request it has read; nobody gets the answer."""

    def error_answer(self, ctx: "RequestContext", body: Any, code: int) -> Any:
        """The request's own error answer with ``code`` (a fault's injected error), in the
        form ``answer`` returns. Raises ``handlers.CloseConnection`` when there is none."""

    def without_brokers(self, ctx: "RequestContext", answer: Any) -> Any:
        """``answer`` (a Metadata answer, in the form ``answer`` returns) with an empty brokers
        list and its topics kept: the ``no_brokers`` fault. Raises ``handlers.CloseConnection``
        when it cannot be rewritten."""

    def encode(self, conn: "Connection", ctx: "RequestContext", body: Any, answer: Any) -> Reply | None:
        """The answer ready to send; None: ``conn`` was closed instead."""

    def quota_ms(self, ctx: "RequestContext", request_bytes: int, reply: Reply) -> float:
        """The throttle a client quota puts on this exchange, or 0."""

    def throttled(self, conn: "Connection", ctx: "RequestContext", body: Any, reply: Reply, throttle_ms: float) -> Reply | None:
        """The reply saying it is throttled for ``throttle_ms`` (``throttle_time_ms``, KIP-219),
        where its version can say so; None: ``conn`` was closed instead."""
