"""Our client's capabilities (conformance/client_capabilities.py), for the adapters of its two faces in
conformance/adapters/ours.py and ours_blocking.py. The client has every capability of the table, on
both faces, its share consumer (client/share/) included: the share scenarios' stories are
conformance/adapters/share_stories.py, told with either face (conformance/adapters/ours_share.py)."""

from __future__ import annotations

from types import MappingProxyType

from conformance.client_capabilities import NAMES, ClientCapabilities, Pin

PIN = Pin("pyproject.toml", "broker-emu")
SOURCE = "../{path}"      # our own files, from docs/

OURS_ASYNC = ClientCapabilities(client="broker-emu (async)", pin=PIN, source=SOURCE, has=NAMES, lacks=MappingProxyType({}))

OURS_BLOCKING = ClientCapabilities(
    client="broker-emu (blocking)", pin=PIN, source=SOURCE, has=NAMES, lacks=MappingProxyType({}))
