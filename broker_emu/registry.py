"""Handler registration. Registering a handler is what advertises an API in ApiVersions, so
what the emulator advertises and what it implements cannot drift (franz-go kfake's shape).

A handler is ``async def handle(ctx: RequestContext, request: Container) -> Mapping | None``.
It is a function of cluster state: code between awaits is atomic under trio, so no locks. Only
real waits (purgatory, long-polls, group barriers) await. Returning ``None`` means "send no
response" (acks=0 produce). Each handler's docstring says which versions it serves and any
deliberate difference from a real broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from broker_emu.context import RequestContext
from client.protocol import ApiKey
from client.protocol.codec import supported_versions
from client.protocol.wire import Message

# ``async def handle_x(ctx: RequestContext, req: Message) -> dict[str, Any]``; None answers nothing
# (Produce with acks=0)
Handler = Callable[[RequestContext, Message], Awaitable[Mapping[str, Any] | None]]


@dataclass(frozen=True)
class Registration:
    api: ApiKey
    min_version: int
    max_version: int
    handler: Handler
    advertised: Callable[[Any], bool] | None = None  # e.g. telemetry only when switched on


REGISTRY: dict[int, Registration] = {}   # keyed by ApiKey; a plain int finds its entry


def handles(api: ApiKey, min_version: int, max_version: int, *, advertised=None):
    """Register ``fn`` as the handler of ``api`` for ``min_version..max_version``."""
    lo, hi = supported_versions(api)
    if not (lo <= min_version <= max_version <= hi):
        raise ValueError(f"{api.name} {min_version}..{max_version} outside codec range {lo}..{hi}")

    def register(fn: Handler) -> Handler:
        if api in REGISTRY:
            raise ValueError(f"{api.name} registered twice")
        REGISTRY[api] = Registration(api, min_version, max_version, fn, advertised)
        return fn

    return register


def advertised_range(cluster: Any, api_key: int) -> tuple[int, int] | None:
    """The version range this cluster serves for ``api_key``, or None if it does not.
    ``cluster``: the cluster, or the proxy (which has no version profile); typed loosely because
    the cluster imports the handlers that register here."""
    reg = REGISTRY.get(api_key)   # an int finds its ApiKey (IntEnum hashes as its value); unknown keys None
    if reg is None or (reg.advertised is not None and not reg.advertised(cluster)):
        return None
    profile = getattr(cluster, "profile", None)   # the proxy has none
    if profile is None:
        return reg.min_version, reg.max_version
    return profile.narrow(api_key, (reg.min_version, reg.max_version))
