"""ApiVersions v0-4. Built from the registry, so advertising and implementing cannot drift.

Any version is accepted; a too-new one is answered by the connection pipeline in the v0 layout
with UNSUPPORTED_VERSION (KIP-511). v3+ checks client_software_name/version like the broker
(letters, digits, '-' and '.', starting and ending with a letter or digit) -> INVALID_REQUEST,
answered like Kafka's ApiVersionsRequest.getErrorResponse: the error and no api keys.

Features (v3+, KIP-584): ``transaction.version`` alone, as a Kafka 4.4 broker lists it (supported
0-2; finalized at the cluster's level, omitted at 0 as KRaft omits a feature at level 0). Java's
``TransactionManager`` reads the finalized level, and only from a finalized-features epoch above
the -1 it starts from, to decide on KIP-890 part 2. Kafka also lists metadata.version,
group.version, share.version, streams.version and eligible.leader.replicas.version; the emulator
leaves those out rather than claim features it does not have (KIP-848 groups are served whatever
the feature says). Profiles before 4.0 list none.
"""

from __future__ import annotations

import re
from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import REGISTRY, advertised_range, handles
from broker_emu.version_profiles import MAX_TRANSACTION_VERSION, TRANSACTION_VERSION
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
    return {"error_code": E.NONE, "api_keys": keys, "throttle_time_ms": 0, **features(ctx.cluster)}


# Kafka's finalized-features epoch is the metadata log offset of the last feature change; a
# cluster's level is fixed when it starts, so one epoch above Java's initial -1 serves
FINALIZED_FEATURES_EPOCH = 1


def features(cluster: Any) -> dict[str, Any]:
    """The features part of the answer (empty for a profile before Kafka 4.0, or the proxy)."""
    profile = getattr(cluster, "profile", None)
    if profile is None or not profile.advertises_features:
        return {}
    level = cluster.config["transaction.version"]
    return {"supported_features": [{"name": TRANSACTION_VERSION, "min_version": 0, "max_version": MAX_TRANSACTION_VERSION}],
            "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": [{"name": TRANSACTION_VERSION, "max_version_level": level, "min_version_level": level}]
            if level > 0 else []}
