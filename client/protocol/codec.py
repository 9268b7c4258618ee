"""Frames: headers and bodies, encoded and decoded.

Request header v1 = api_key, api_version, correlation_id, client_id (int16-length nullable
string); v2 adds a tagged-field section, and client_id keeps its int16 length even there, so a
broker can always read the header before it knows whether it understands the version.
Response header v0 = correlation_id; v1 adds a tagged-field section. Flexible versions use
request v2 / response v1, except that ApiVersions responses always use header v0 (KIP-511: a
client that guessed too new a version must still read the error).
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any, Mapping, NamedTuple

from client.protocol.build import data_construct, message_construct
from client.protocol.errors import CorruptFrameError, UnknownApiError, UnsupportedCodecVersionError
from client.protocol.framing import Frame
from client.protocol.messages import ALL_APIS
from client.protocol.schema import Api
from client.protocol.wire import DecodeError, EncodeError, FrameIO, Message, read_tagged, reader_of

API_VERSIONS_KEY = 18
_HEADER_FIXED = struct.Struct(">hhih")
_I32 = struct.Struct(">i")
_SIZE = struct.Struct(">i")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes the header takes; the body starts here
    tagged: Mapping[str, Any] | None = None


def api_spec(api_key: int) -> Api:
    try:
        return ALL_APIS[api_key]
    except KeyError:
        raise UnknownApiError(api_key) from None


def supported_versions(api_key: int) -> tuple[int, int]:
    return api_spec(api_key).version_range


def _check_version(api_key: int, version: int) -> Api:
    api = api_spec(api_key)
    lo, hi = api.version_range
    if not lo <= version <= hi:
        raise UnsupportedCodecVersionError(api_key, version, (lo, hi))
    return api


_FLEXIBLE = {(key, v) for key, api in ALL_APIS.items() for v in range(api.version_range[0], api.version_range[1] + 1) if api.is_flexible(v)}


def request_header_version(api_key: int, version: int) -> int:
    return 2 if (api_key, version) in _FLEXIBLE else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if (api_key, version) in _FLEXIBLE else 0


# -- requests ----------------------------------------------------------------------------------

def decode_request_header(frame: Frame, anomalies: list[str] | None = None) -> RequestHeader:
    """Read a request header. Works for APIs and versions the codec does not know (their
    header is assumed to be v1), so the caller can still name what it refuses. With an
    ``anomalies`` list the header's tagged section is read as Kafka reads it (see
    ``decode_request``)."""
    if type(frame) is not bytes and type(frame) is not bytearray:   # a bytearray is read in place
        frame = bytes(frame)
    try:
        api_key, version, correlation_id, n = _HEADER_FIXED.unpack_from(frame, 0)
    except struct.error:
        # name what the bytes claim as far as they go, so the error says which request was cut
        key = ver = None
        if len(frame) >= 4:
            key, ver = int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True)
        raise CorruptFrameError("request header", key, ver, len(frame), f"frame of {len(frame)} bytes is too short") from None
    pos = 10
    client_id = None
    if n >= 0:
        if pos + n > len(frame):
            raise CorruptFrameError("request header", api_key, version, pos, f"client_id length {n} exceeds the frame")
        try:
            client_id = frame[pos:pos + n].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptFrameError("request header", api_key, version, pos, "client_id is not UTF-8") from None
        pos += n
    elif n != -1:
        raise CorruptFrameError("request header", api_key, version, 8, f"invalid client_id length {n}")
    tagged = None
    if request_header_version(api_key, version) == 2:
        if pos < len(frame) and frame[pos] == 0:  # empty tagged section: the common case
            return RequestHeader(api_key, version, correlation_id, client_id, pos + 1, Message())
        io = reader_of(frame)
        io.seek(pos)
        tagged = Message()
        this = {"_end": len(frame)} if anomalies is None else {"_end": len(frame), "_anomalies": anomalies}
        try:
            read_tagged(io, this, tagged, {})
        except DecodeError as exc:
            raise CorruptFrameError("request header", api_key, version, io.tell(), str(exc)) from None
        pos = io.tell()
    return RequestHeader(api_key, version, correlation_id, client_id, pos, tagged)


def decode_request(frame: Frame, header: RequestHeader | None = None, *,
                   records_as_views: bool = False,
                   anomalies: list[str] | None = None) -> tuple[RequestHeader, Message]:
    """Decode a request frame (without its size prefix) into its header and body; ``header``,
    when the caller already decoded it from this frame, is not read again. With
    ``records_as_views``, records fields are read-only memoryviews of ``frame`` (no copy).

    Strict by default: anything but one exact encoding is a CorruptFrameError. Given an
    ``anomalies`` list, the frame is read the way Apache Kafka's broker reads it, and what a
    strict read would refuse but Kafka accepts is appended there as text instead:

    - bytes after the body are ignored: ``RequestContext.parseRequest`` hands the buffer to
      ``AbstractRequest.parseRequest``, whose generated ``*RequestData.read`` takes the fields
      its schema names and nothing checks ``buffer.remaining()`` afterwards (librdkafka 2.16's
      admin client sends 3 such bytes after a Metadata v12 body);
    - tagged fields (body and header, ``RequestHeaderData``) in any order, a repeated known
      tag overwriting the earlier value (the generated readers switch on each tag in turn);
      unknown tags are kept, unread, as Kafka keeps ``_unknownTaggedFields`` (strict does too).

    What Kafka refuses stays refused (``SocketServer.processCompletedReceives`` closes the
    connection on any parse error): short fields, impossible lengths, bad UTF-8, unknown API
    keys and versions. One place where we are stricter: a known tagged field whose value does not
    fill its declared size. Kafka reads the value by its type and would take the leftover bytes
    for the next tag; we refuse the frame rather than guess where that read would go."""
    if type(frame) is not bytes and type(frame) is not bytearray:   # a bytearray is read in place
        frame = bytes(frame)
    if header is None:
        header = decode_request_header(frame, anomalies)
    _check_version(header.api_key, header.api_version)
    con = message_construct(header.api_key, header.api_version, "request")
    body = _parse(con, frame, header.size, "request", header.api_key, header.api_version, views=records_as_views,
                  anomalies=anomalies)
    return header, body


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Mapping[str, Any]) -> bytes:
    """A whole request frame, size prefix included."""
    return b"".join(encode_request_parts(api_key, version, correlation_id, client_id, body))


def encode_request_parts(api_key: int, version: int, correlation_id: int, client_id: str | None,
                         body: Mapping[str, Any]) -> list[bytes]:
    """``encode_request`` as buffers to send in order, large record batches not copied
    (wire.FrameIO)."""
    _check_version(api_key, version)
    io = FrameIO()
    io.write(b"\0\0\0\0")
    if client_id is None:
        io.write(_HEADER_FIXED.pack(api_key, version, correlation_id, -1))
    else:
        cid = client_id.encode("utf-8")
        io.write(_HEADER_FIXED.pack(api_key, version, correlation_id, len(cid)))
        io.write(cid)
    if request_header_version(api_key, version) == 2:
        io.write(b"\0")
    _build(message_construct(api_key, version, "request"), body, io, "request", api_key, version)
    return io.parts()


# -- responses ---------------------------------------------------------------------------------

def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """A whole response frame, size prefix included."""
    return b"".join(encode_response_parts(api_key, version, correlation_id, body))


def encode_response_parts(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> list[bytes]:
    """``encode_response`` as buffers to send in order, large record batches not copied."""
    _check_version(api_key, version)
    io = FrameIO()
    io.write(b"\0\0\0\0")
    io.write(_I32.pack(correlation_id))
    if response_header_version(api_key, version) == 1:
        io.write(b"\0")
    _build(message_construct(api_key, version, "response"), body, io, "response", api_key, version)
    return io.parts()


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Message]:
    """Decode a response frame (without size prefix) to (correlation_id, body)."""
    frame = bytes(frame)
    _check_version(api_key, version)
    if len(frame) < 4:
        raise CorruptFrameError("response header", api_key, version, 0, "frame shorter than 4 bytes")
    correlation_id = _I32.unpack_from(frame, 0)[0]
    pos = 4
    if response_header_version(api_key, version) == 1:
        io = BytesIO(frame)
        io.seek(pos)
        try:
            read_tagged(io, {"_end": len(frame)}, Message(), {})
        except DecodeError as exc:
            raise CorruptFrameError("response header", api_key, version, io.tell(), str(exc)) from None
        pos = io.tell()
    con = message_construct(api_key, version, "response")
    return correlation_id, _parse(con, frame, pos, "response", api_key, version)


# -- consumer protocol blobs (JoinGroup metadata, SyncGroup assignment) --------------------------

def encode_consumer_blob(name: str, version: int, body: Mapping[str, Any]) -> bytes:
    """``name``: CONSUMER_PROTOCOL_SUBSCRIPTION or CONSUMER_PROTOCOL_ASSIGNMENT."""
    io = BytesIO()
    io.write(struct.pack(">h", version))
    _build(data_construct(name, version), body, io, name.lower(), None, version)
    return io.getvalue()


def decode_consumer_blob(name: str, blob: bytes) -> tuple[int, Message]:
    """Newer versions than we know are read as our newest, ignoring trailing fields, as Kafka's
    ConsumerProtocol does, so a newer client's metadata still parses."""
    from client.protocol import messages

    blob = bytes(blob)
    if len(blob) < 2:
        raise CorruptFrameError(name.lower(), None, None, 0, "blob shorter than its version")
    version = struct.unpack_from(">h", blob)[0]
    lo, hi = getattr(messages, name).version_range
    if version < lo:
        raise CorruptFrameError(name.lower(), None, version, 0, f"version {version} below {lo}")
    used = min(version, hi)
    body = _parse(data_construct(name, used), blob, 2, name.lower(), None, used, allow_trailing=version > hi)
    return version, body


# -- shared ------------------------------------------------------------------------------------

def _parse(con, frame: Frame, start: int, what: str, api_key, version, allow_trailing: bool = False,
           views: bool = False, anomalies: list[str] | None = None):
    io = reader_of(frame)
    io.seek(start)
    # read-only views even of a bytearray frame (nobody writes to a received frame): the log keeps
    # a read-only view as it is, and copies anything it could see change
    this: dict[str, Any] = {"_end": len(frame), "_view": memoryview(frame).toreadonly()} if views else {"_end": len(frame)}
    if anomalies is not None:
        this["_anomalies"] = anomalies
    try:
        body = con.parsefunc(io, this) if hasattr(con, "parsefunc") else con._parse(io, this, "")
    except RecursionError:
        raise CorruptFrameError(what, api_key, version, io.tell(), "nesting too deep") from None
    except Exception as exc:  # any failure on hostile bytes is a corrupt frame, never a crash
        raise CorruptFrameError(what, api_key, version, io.tell(), f"{type(exc).__name__}: {exc}") from None
    if io.tell() != len(frame) and anomalies is not None:
        anomalies.append(f"{len(frame) - io.tell()} bytes after the body (ignored, as Kafka does)")
    elif io.tell() != len(frame) and not allow_trailing:
        raise CorruptFrameError(what, api_key, version, io.tell(), f"{len(frame) - io.tell()} unread bytes at the end")
    return body


def _build(con, body, io: BytesIO, what: str, api_key, version) -> None:
    try:
        if hasattr(con, "buildfunc"):
            con.buildfunc(body, io, None)
        else:
            con._build(body, io, None, "")
    except EncodeError as exc:
        raise EncodeError(f"cannot encode {what} api_key={api_key} v{version}: {exc}") from None
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as exc:
        raise EncodeError(f"cannot encode {what} api_key={api_key} v{version}: {type(exc).__name__}: {exc}") from None


