"""The Kafka wire codec shared by the emulator and our client.

Theory of operation
-------------------
Every API is described once, declaratively (``client.protocol.messages``, generated from Kafka's
message JSON by ``tools/generate_messages.py``): fields carry version ranges, nullable and
tagged versions and defaults. ``client.protocol.build`` turns one (api, version, request or
response) into a construct struct, built once, cached and compiled.

Messages are plain mappings with snake_case field names (``TopicData`` -> ``topic_data``).
Decoding returns ``construct.Container`` objects (dicts with attribute access); encoding accepts
any mapping, and a missing field takes its schema default. ``records`` fields are raw bytes:
record batches are handled by ``client.protocol.records``. UUIDs are ``uuid.UUID``.

Frames on the wire are an int32 size followed by header + body. The ``encode_*`` functions return
whole frames (size prefix included); the ``decode_*`` functions take a frame *without* its size
prefix. Malformed input raises ``CorruptFrameError`` naming the API, version and byte offset.
"""

from client.protocol.api_keys import ApiKey
from client.protocol.codec import (
    RequestHeader,
    api_spec,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
    supported_versions,
)
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
    "RequestHeader",
    "UnknownApiError",
    "UnsupportedCodecVersionError",
    "api_spec",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "request_header_version",
    "response_header_version",
    "supported_versions",
]
