"""ApiVersions v0-4. Built from the registry, so advertising and implementing cannot drift.

Any version is accepted; a too-new one is answered by the connection pipeline in the v0 layout
with UNSUPPORTED_VERSION (KIP-511). v3+ checks client_software_name/version like the broker
(letters, digits, '-' and '.', starting and ending with a letter or digit) -> INVALID_REQUEST,
answered like Kafka's ApiVersionsRequest.getErrorResponse: the error and no api keys.
"""

from __future__ import annotations

import re
from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import REGISTRY, advertised_range, handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@handles(ApiKey.API_VERSIONS, 0, 4)
async def api_versions(ctx: RequestContext, req: Message) -> dict[str, Any]:
    if ctx.api_version >= 3 and not (_SOFTWARE.fullmatch(req.client_software_name or "")
                                     and _SOFTWARE.fullmatch(req.client_software_version or "")):
        # ApiVersionsRequest.getErrorResponse: the error alone, no api keys
        return {"error_code": E.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
    keys = []
    for api in sorted(REGISTRY):
        rng = advertised_range(ctx.cluster, api)
        if rng is not None:
            keys.append({"api_key": int(api), "min_version": rng[0], "max_version": rng[1]})
    return {"error_code": E.NONE, "api_keys": keys, "throttle_time_ms": 0}
