"""The Kafka wire codec shared by the emulator and our client.

Theory of operation
-------------------
Every API is described once, declaratively (``client.protocol.messages``, generated from Kafka's
message JSON by ``tools/generate_messages.py``): fields carry version ranges, nullable and
tagged versions and defaults. ``client.protocol.build`` turns one (api, version, request or
response) into a struct, built once, cached and compiled (``client.protocol.compiler``).

Messages are plain mappings with snake_case field names (``TopicData`` -> ``topic_data``).
Decoding returns ``wire.Message`` objects (dicts with attribute access); encoding accepts
any mapping, and a missing field takes its schema default. ``records`` fields are raw bytes:
record batches are handled by ``client.protocol.records``. UUIDs are ``uuid.UUID``.

Frames on the wire are an int32 size followed by header + body. The ``encode_*`` functions return
whole frames (size prefix included); the ``decode_*`` functions take a frame *without* its size
prefix. Malformed input raises ``CorruptFrameError`` naming the API, version and byte offset.

The functions are ``client.protocol.codec``'s (``encode_request``, ``decode_request`` ...). This
``__init__`` runs before every module of the codec, so it re-exports only leaves, modules that
import nothing of the package — the API keys and the errors: a re-export of the codec would load
all of it (60 message modules) for any one of its modules, and put them in one import cycle
(tests/structure/test_layers.py).
"""

from client.protocol.api_keys import ApiKey
from client.protocol.errors import (
    CorruptFrameError,
    ProtocolError,
    UnknownApiError,
    UnsupportedCodecVersionError,
)

__all__ = [
    "ApiKey",
    "CorruptFrameError",
    "ProtocolError",
    "UnknownApiError",
    "UnsupportedCodecVersionError",
]
