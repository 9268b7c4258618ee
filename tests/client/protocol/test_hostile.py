"""Hostile bytes: whatever arrives, decoding either succeeds or raises the codec's own error
naming the API, version and byte offset — never another exception, never a hang, never an
allocation sized by a claimed length.

Allowed outcomes: ``CorruptFrameError``; for requests also ``UnknownApiError`` and
``UnsupportedCodecVersionError`` when the header's api/version is one the codec does not serve.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.protocol import CorruptFrameError, UnknownApiError, UnsupportedCodecVersionError
from client.protocol.codec import (
    decode_consumer_blob,
    decode_request,
    decode_request_header,
    decode_response,
    encode_consumer_blob,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
    supported_versions,
)
from client.protocol.messages import ALL_APIS
from client.protocol.wire import EncodeError
from tests.client.protocol.strategies import (
    NO_TAGS,
    Options,
    arr32,
    blob_strategy,
    boolean,
    bytes32,
    carr,
    case_id,
    cases,
    cbytes,
    cstr,
    i8,
    i16,
    i32,
    i64,
    message_strategy,
    request_header,
    str16,
    tags,
    uuid_,
    uvarint,
)

HOSTILE = settings(max_examples=4, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CASES = list(cases())
SUBSCRIPTION = "CONSUMER_PROTOCOL_SUBSCRIPTION"
ASSIGNMENT = "CONSUMER_PROTOCOL_ASSIGNMENT"


# -- what an error must say ----------------------------------------------------------------------

def check_corrupt(exc: CorruptFrameError, frame: bytes, key, version) -> None:
    assert (exc.api_key, exc.version) == (key, version), f"error names {exc.api_key}/{exc.version}: {exc}"
    assert 0 <= exc.offset <= len(frame), exc
    text = str(exc)
    assert f"api_key={key}" in text and f"version={version}" in text and f"at byte {exc.offset}" in text, text


def claimed(frame: bytes) -> tuple[int | None, int | None]:
    """The api key and version a request frame claims, once their four bytes are there."""
    if len(frame) < 4:
        return None, None
    return int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True)


def served(key, version) -> bool:
    return key in ALL_APIS and supported_versions(key)[0] <= version <= supported_versions(key)[1]


def try_request(frame: bytes):
    """Decode a request frame; returns the body or None; fails the test on any other outcome
    than the allowed errors, and checks what the error says."""
    key, version = claimed(frame)
    try:
        header, body = decode_request(frame)
    except CorruptFrameError as exc:
        if len(frame) < 10 and exc.api_key is None:  # a cut fixed header: test_short_frames_name_...
            key = version = None
        check_corrupt(exc, frame, key, version)
        return None
    except UnknownApiError as exc:
        assert exc.api_key == key and key not in ALL_APIS
        return None
    except UnsupportedCodecVersionError as exc:
        assert (exc.api_key, exc.version) == (key, version) and not served(key, version)
        return None
    assert (header.api_key, header.api_version) == (key, version)
    return body


def try_response(key: int, version: int, frame: bytes):
    try:
        return decode_response(key, version, frame)[1]
    except CorruptFrameError as exc:
        check_corrupt(exc, frame, key, version)
        return None


def try_blob(name: str, blob: bytes):
    try:
        return decode_consumer_blob(name, blob)
    except CorruptFrameError as exc:
        assert 0 <= exc.offset <= len(blob) and f"at byte {exc.offset}" in str(exc), exc
        if len(blob) >= 2:
            assert exc.version == int.from_bytes(blob[:2], "big", signed=True) or exc.version == supported_blob(name)
        return None


def supported_blob(name: str) -> int:
    from client.protocol import messages
    return getattr(messages, name).version_range[1]


def must_fail_request(frame: bytes, match: str | None = None) -> CorruptFrameError:
    key, version = claimed(frame)
    with pytest.raises(CorruptFrameError, match=match) as info:
        decode_request(frame)
    check_corrupt(info.value, frame, key, version)
    return info.value


def must_fail_response(key: int, version: int, frame: bytes, match: str | None = None) -> CorruptFrameError:
    with pytest.raises(CorruptFrameError, match=match) as info:
        decode_response(key, version, frame)
    check_corrupt(info.value, frame, key, version)
    return info.value


def frame_of(key: int, version: int, direction: str, body: dict) -> bytes:
    if direction == "request":
        return encode_request(key, version, 99, "hostile", body)[4:]
    return encode_response(key, version, 99, body)[4:]


# -- every API: truncations, mutations, random bodies ------------------------------------------------

@pytest.mark.parametrize("key, version, direction", CASES, ids=[case_id(c) for c in CASES])
@HOSTILE
@given(data=st.data())
def test_truncations_and_single_byte_mutations(key, version, direction, data):
    body = data.draw(message_strategy(key, version, direction, Options(unknown_tags=True)), label="body")
    frame = frame_of(key, version, direction, body)
    decode = try_request if direction == "request" else (lambda f: try_response(key, version, f))

    # a valid encoding has no valid strict prefix: every truncation is corrupt. (Cuts inside the
    # request header's fixed 10 bytes are the same for every API: test_short_frames_name_...)
    for cut in range(10 if direction == "request" else 0, len(frame)):
        if direction == "request":
            must_fail_request(frame[:cut])
        else:
            must_fail_response(key, version, frame[:cut])
    # trailing bytes are corrupt too
    if direction == "request":
        must_fail_request(frame + b"\x00", match="unread bytes")
    else:
        must_fail_response(key, version, frame + b"\x00", match="unread bytes")

    # every single-byte change either decodes to something we can write again, or is refused
    positions = range(len(frame)) if len(frame) <= 96 else data.draw(
        st.lists(st.integers(0, len(frame) - 1), min_size=96, max_size=96), label="positions")
    flip = data.draw(st.integers(1, 255), label="xor")
    for pos in positions:
        for x in (flip, 0xFF):
            mutated = bytearray(frame)
            mutated[pos] ^= x
            decoded = decode(bytes(mutated))
            if decoded is not None:
                mk, mv = claimed(bytes(mutated)) if direction == "request" else (key, version)
                again = frame_of(mk, mv, direction, decoded)
                # written again, it reads the same (bytes compared: a mutated float64 may be NaN, != itself)
                assert frame_of(mk, mv, direction, decode(again)) == again


@pytest.mark.parametrize("key, version, direction", CASES, ids=[case_id(c) for c in CASES])
@HOSTILE
@given(junk=st.binary(max_size=48))
def test_random_bodies_behind_a_valid_header(key, version, direction, junk):
    if direction == "request":
        try_request(request_header(key, version, 1, "c", request_header_version(key, version) == 2) + junk)
    else:
        try_response(key, version, i32(1) + (NO_TAGS if response_header_version(key, version) == 1 else b"") + junk)


@given(raw=st.binary(max_size=64))
@settings(max_examples=400, deadline=None)
def test_random_request_frames(raw):
    try_request(raw)


@given(raw=st.binary(max_size=64), case=st.sampled_from(CASES))
@settings(max_examples=400, deadline=None)
def test_random_response_frames(raw, case):
    key, version, _ = case
    try_response(key, version, raw)


@given(raw=st.binary(max_size=48), name=st.sampled_from([SUBSCRIPTION, ASSIGNMENT]))
@settings(max_examples=300, deadline=None)
def test_random_consumer_blobs(raw, name):
    try_blob(name, raw)


@pytest.mark.parametrize("kind", ["subscription", "assignment"])
@pytest.mark.parametrize("version", range(4))
@HOSTILE
@given(data=st.data())
def test_consumer_blob_truncations_and_mutations(kind, version, data):
    name = "CONSUMER_PROTOCOL_" + kind.upper()
    blob = encode_consumer_blob(name, version, data.draw(blob_strategy(kind, version)))
    for cut in range(len(blob)):
        with pytest.raises(CorruptFrameError):
            decode_consumer_blob(name, blob[:cut])
    with pytest.raises(CorruptFrameError, match="unread bytes"):
        decode_consumer_blob(name, blob + b"\x00")
    for pos in range(len(blob)):
        mutated = bytearray(blob)
        mutated[pos] ^= data.draw(st.integers(1, 255))
        try_blob(name, bytes(mutated))


def test_a_newer_blob_version_is_read_as_our_newest_ignoring_what_follows():
    # v4 does not exist yet: Kafka's ConsumerProtocol reads it as its newest and ignores the rest
    v3 = arr32([str16("t")]) + bytes32(None) + arr32([]) + i32(7) + str16("r1")
    version, body = decode_consumer_blob(SUBSCRIPTION, i16(4) + v3 + b"future fields")
    assert version == 4 and body.topics == ["t"] and body.generation_id == 7 and body.rack_id == "r1"
    with pytest.raises(CorruptFrameError, match="unread bytes"):
        decode_consumer_blob(SUBSCRIPTION, i16(3) + v3 + b"x")
    with pytest.raises(CorruptFrameError):
        decode_consumer_blob(SUBSCRIPTION, i16(-1) + v3)


# -- claimed lengths far beyond the frame ------------------------------------------------------------

def _h1(key, version):
    return request_header(key, version, 1, "c", v2=False)


def _h2(key, version):
    return request_header(key, version, 1, "c", v2=True)


HUGE = 2**31 - 1
HUGE_CLAIMS = {
    # classic array count (Metadata v4 topics)
    "classic array": (lambda: decode_request(_h1(3, 4) + i32(HUGE) + b"\x00" * 8)),
    # compact array count (Metadata v12 topics)
    "compact array": (lambda: decode_request(_h2(3, 12) + uvarint(HUGE + 1) + b"\x00" * 8)),
    # classic string (Heartbeat v0 group_id; int16 lengths top out at 32767)
    "classic string": (lambda: decode_request(_h1(12, 0) + i16(0x7FFF) + b"g" * 8)),
    # compact string (Heartbeat v4 group_id)
    "compact string": (lambda: decode_request(_h2(12, 4) + uvarint(HUGE + 1) + b"g" * 8)),
    # classic bytes (SaslAuthenticate v0 auth_bytes)
    "classic bytes": (lambda: decode_request(_h1(36, 0) + i32(HUGE) + b"a" * 8)),
    # compact bytes (SaslAuthenticate v2)
    "compact bytes": (lambda: decode_request(_h2(36, 2) + uvarint(HUGE + 1) + b"a" * 8)),
    # records (Produce v3: transactional_id null, acks, timeout, one topic, one partition)
    "classic records": (lambda: decode_request(_h1(0, 3) + str16(None) + i16(1) + i32(0) + i32(1) + str16("t")
                                               + i32(1) + i32(0) + i32(HUGE) + b"r" * 8)),
    "compact records": (lambda: decode_request(_h2(0, 9) + cstr(None) + i16(1) + i32(0) + uvarint(2) + cstr("t")
                                               + uvarint(2) + i32(0) + uvarint(HUGE + 1) + b"r" * 8)),
    # int array (Metadata v0 response, replica_nodes read in one unpack)
    "int array": (lambda: decode_response(3, 0, i32(1) + arr32([]) + arr32([i16(0) + str16("t") + i32(1)
                                          + i16(0) + i32(0) + i32(0) + i32(HUGE)]) + b"\x00" * 8)),
    # tagged section: a huge count, then a huge size (ApiVersions v3 response)
    "tag count": (lambda: decode_response(18, 3, i32(1) + i16(0) + carr([]) + i32(0) + uvarint(HUGE) + b"\x00" * 8)),
    "tag size": (lambda: decode_response(18, 3, i32(1) + i16(0) + carr([]) + i32(0) + uvarint(1) + uvarint(9)
                                         + uvarint(HUGE) + b"\x00" * 8)),
    # request header client_id
    "client_id": (lambda: decode_request(i16(18) + i16(0) + i32(1) + i16(0x7FFF) + b"c" * 8)),
    # consumer blob topics
    "blob array": (lambda: decode_consumer_blob(SUBSCRIPTION, i16(0) + i32(HUGE) + b"\x00" * 8)),
}


@pytest.mark.parametrize("what", HUGE_CLAIMS)
def test_huge_claimed_lengths_fail_without_allocating_by_the_claim(what):
    decode = HUGE_CLAIMS[what]
    with pytest.raises(CorruptFrameError, match="exceeds"):
        decode()  # first call also builds and compiles the construct: not measured
    tracemalloc.start()
    try:
        with pytest.raises(CorruptFrameError, match="exceeds") as info:
            decode()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"{what}: peak allocation {peak} bytes"
    assert "at byte" in str(info.value)


def test_huge_claims_name_the_api_version_and_offset():
    frame = _h1(3, 4) + i32(HUGE) + b"\x00" * 8
    exc = must_fail_request(frame, match="exceeds")
    assert exc.offset == len(_h1(3, 4)) + 4  # just after the count that claims too much
    exc = must_fail_response(18, 3, i32(1) + i16(0) + carr([]) + i32(0) + uvarint(1) + uvarint(9) + uvarint(HUGE),
                             match="exceeds")
    assert exc.api_key == 18 and exc.version == 3


# -- nulls where the schema has none -----------------------------------------------------------------

def test_null_array_count_in_a_non_nullable_position():
    # Metadata topics become nullable in v1: -1 is refused in v0, means "all topics" in v1
    must_fail_request(_h1(3, 0) + i32(-1), match="invalid array length -1")
    _, body = decode_request(_h1(3, 1) + i32(-1))
    assert body.topics is None
    # SyncGroup v0 assignments are never nullable
    must_fail_request(_h1(14, 0) + str16("g") + i32(1) + str16("m") + i32(-1), match="invalid array length -1")
    # a count below -1 is corrupt even where null is allowed
    must_fail_request(_h1(3, 1) + i32(-2), match="invalid array length -2")


def test_null_string_and_bytes_in_non_nullable_positions():
    must_fail_request(_h1(12, 0) + str16(None) + i32(1) + str16("m"), match="invalid string length -1")
    must_fail_request(_h1(36, 0) + bytes32(None), match="invalid bytes length -1")
    # InitProducerId transactional_id is nullable: -1 is fine, -2 is not
    assert decode_request(_h1(22, 0) + str16(None) + i32(5))[1].transactional_id is None
    must_fail_request(_h1(22, 0) + i16(-2) + i32(5), match="invalid string length -2")


def test_compact_null_where_not_nullable():
    # Heartbeat v4 group_id: compact length 0 means null, which it may not be
    must_fail_request(_h2(12, 4) + b"\x00" + i32(1) + cstr("m") + cstr(None) + NO_TAGS, match="invalid string length -1")
    # Metadata v12 response brokers: compact array 0 = null, not allowed there
    must_fail_response(3, 12, i32(1) + NO_TAGS + i32(0) + b"\x00" + cstr(None) + i32(-1) + carr([])
                       + NO_TAGS, match="invalid array length -1")
    # SaslAuthenticate v2 auth_bytes
    must_fail_request(_h2(36, 2) + cbytes(None) + NO_TAGS, match="invalid bytes length -1")
    # and where it is nullable, compact 0 is null: Metadata v12 request topics
    assert decode_request(_h2(3, 12) + carr(None) + boolean(True) + boolean(False) + NO_TAGS)[1].topics is None


def test_invalid_nullable_struct_marker():
    # ConsumerGroupHeartbeat v0 response: assignment is a nullable struct, -1 (0xff) or 1
    head = i32(1) + NO_TAGS + i32(0) + i16(0) + cstr(None) + cstr(None) + i32(0) + i32(0)
    assert decode_response(68, 0, head + b"\xff" + NO_TAGS)[1].assignment is None
    assert decode_response(68, 0, head + b"\x01" + carr([]) + NO_TAGS + NO_TAGS)[1].assignment == {"topic_partitions": []}
    must_fail_response(68, 0, head + b"\x02" + carr([]) + NO_TAGS + NO_TAGS, match="nullable-struct marker")


# -- varints and tagged sections ---------------------------------------------------------------------

def test_unsigned_varint_longer_than_five_bytes():
    six = b"\x81\x80\x80\x80\x80\x00"  # a valid-looking value, spelled over six bytes
    must_fail_request(_h2(12, 4) + six + b"g" * 8, match="longer than 5 bytes")
    must_fail_response(18, 3, i32(1) + i16(0) + carr([]) + i32(0) + six, match="longer than 5 bytes")
    must_fail_request(_h2(12, 4) + b"\x80\x80", match="truncated unsigned varint")
    # five bytes is the longest allowed; a non-minimal encoding of 2 ("g" + 1) is still read
    five = b"\x82\x80\x80\x80\x00"
    assert decode_request(_h2(12, 4) + five + b"g" + i32(1) + cstr("m") + cstr(None) + NO_TAGS)[1].group_id == "g"


def test_tagged_fields_out_of_order_or_repeated():
    # ApiVersions v3 response: finalized_features_epoch (tag 1) then supported_features (tag 0)
    body = i16(0) + carr([]) + i32(0)
    epoch, features = i64(5), carr([])
    good = decode_response(18, 3, i32(1) + body + tags({0: features, 1: epoch}))[1]
    assert good.finalized_features_epoch == 5 and good.supported_features == []
    section = uvarint(2) + uvarint(1) + uvarint(8) + epoch + uvarint(0) + uvarint(1) + features
    must_fail_response(18, 3, i32(1) + body + section, match="out of order")
    repeated = uvarint(2) + uvarint(1) + uvarint(8) + epoch + uvarint(1) + uvarint(8) + epoch
    must_fail_response(18, 3, i32(1) + body + repeated, match="out of order")
    # the same in a request header v2 section
    header = i16(18) + i16(3) + i32(1) + str16("c") + uvarint(2) + uvarint(5) + uvarint(0) + uvarint(4) + uvarint(0)
    with pytest.raises(CorruptFrameError, match="out of order") as info:
        decode_request_header(header + cstr("a") + cstr("b") + NO_TAGS)
    assert (info.value.api_key, info.value.version) == (18, 3)


def test_a_tagged_value_with_stray_bytes_inside_its_size():
    # finalized_features_epoch is an int64; a size of 9 leaves a stray byte inside the tag
    body = i16(0) + carr([]) + i32(0)
    must_fail_response(18, 3, i32(1) + body + uvarint(1) + uvarint(1) + uvarint(9) + i64(5) + b"\x00",
                       match="stray bytes")


def test_trailing_bytes_after_the_body():
    valid = _h1(12, 0) + str16("g") + i32(1) + str16("m")
    assert decode_request(valid)[1].group_id == "g"
    exc = must_fail_request(valid + b"\x00\x00", match="2 unread bytes")
    assert exc.offset == len(valid)
    must_fail_response(12, 0, i32(1) + i16(0) + b"\x00", match="1 unread bytes")
    must_fail_response(12, 4, i32(1) + NO_TAGS + i32(0) + i16(0) + NO_TAGS + b"\x00", match="1 unread bytes")


# -- text that is not UTF-8 ------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"a\x80b", b"\xf4\x90\x80\x80"],
                         ids=["ff", "truncated-2-byte", "surrogate", "lone-continuation", "above-10ffff"])
def test_strings_that_are_not_utf8(bad):
    must_fail_request(_h1(12, 0) + i16(len(bad)) + bad + i32(1) + str16("m"), match="not UTF-8")
    must_fail_request(_h2(12, 4) + uvarint(len(bad) + 1) + bad + i32(1) + cstr("m") + cstr(None) + NO_TAGS,
                      match="not UTF-8")
    # the client id in the header
    with pytest.raises(CorruptFrameError, match="not UTF-8") as info:
        decode_request(i16(12) + i16(0) + i32(1) + i16(len(bad)) + bad + str16("g") + i32(1) + str16("m"))
    assert (info.value.api_key, info.value.version) == (12, 0)
    # strings inside the consumer protocol blobs
    with pytest.raises(CorruptFrameError, match="not UTF-8"):
        decode_consumer_blob(SUBSCRIPTION, i16(0) + i32(1) + i16(len(bad)) + bad + bytes32(None))


def test_unknown_api_and_version_in_the_header():
    with pytest.raises(UnknownApiError):
        decode_request(_h1(1000, 0))
    with pytest.raises(UnsupportedCodecVersionError) as info:
        decode_request(_h1(3, 14))
    assert info.value.supported == (0, 13)
    # the header alone still reads, so the refusal can name what was asked
    header = decode_request_header(_h1(1000, 7))
    assert (header.api_key, header.api_version, header.client_id) == (1000, 7, "c")


def test_short_frames_name_what_the_header_claims():
    """Even a header cut short names the api and version once their 4 bytes are there."""
    wrong = []
    for key, version, direction in CASES:
        if direction != "request":
            continue
        full = request_header(key, version, 1, "c", request_header_version(key, version) == 2)
        for cut in range(10):
            with pytest.raises(CorruptFrameError) as info:
                decode_request(full[:cut])
            exc = info.value
            if (exc.api_key, exc.version) != claimed(full[:cut]) or not 0 <= exc.offset <= cut:
                wrong.append((cut, str(exc)))
    assert wrong == [], f"{len(wrong)} cut headers misnamed, e.g. {wrong[:3]}"


def test_uuid_and_fixed_width_fields_cut_short():
    # GetTelemetrySubscriptions v0 request: a 16-byte uuid with 15 bytes present
    must_fail_request(_h2(71, 0) + uuid_(1)[:15])
    must_fail_request(_h2(71, 0) + uuid_(1))  # the tagged section is missing
    assert decode_request(_h2(71, 0) + uuid_(1) + NO_TAGS)[1].client_instance_id.int == 1
    must_fail_request(_h1(22, 3) + str16(None) + i32(1) + i64(5)[:7])
    must_fail_response(23, 2, i32(1) + i32(0) + arr32([str16("t") + arr32([i16(0) + i32(0) + i32(0) + i64(0)[:3]])]))
    assert decode_request(_h2(60, 0) + boolean(True) + NO_TAGS)[1].include_cluster_authorized_operations
    assert decode_request(_h2(60, 1) + boolean(False) + i8(2) + NO_TAGS)[1].endpoint_type == 2


def test_strings_are_at_most_32767_bytes_in_compact_form_too():
    """Kafka's generated readers and writers refuse a string over 0x7fff bytes whatever its
    length prefix (``string field X had invalid length``; ``field is too long to be
    serialized``): a compact length can claim more, but a real peer would reject it."""
    rest = i32(1) + cstr("m") + cstr(None) + NO_TAGS
    ok = _h2(12, 4) + uvarint(0x7FFF + 1) + b"g" * 0x7FFF + rest
    assert len(decode_request(ok)[1].group_id) == 0x7FFF
    must_fail_request(_h2(12, 4) + uvarint(0x8000 + 1) + b"g" * 0x8000 + rest)
    body = {"group_id": "g" * 0x8000, "generation_id": 1, "member_id": "m"}
    for version in (0, 4):  # classic and compact
        with pytest.raises(EncodeError):
            encode_request(12, version, 1, "c", body)


# -- what Kafka's broker accepts (the lenient read the emulator uses) ----------------------------

def test_a_lenient_read_accepts_what_kafka_accepts_and_says_so():
    # librdkafka 2.16's AdminClient.list_topics(): Metadata v12 with 3 bytes after the body.
    # Kafka's generated MetadataRequestData.read ignores them; a strict read refuses them.
    frame = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    must_fail_request(frame, match="3 unread bytes")
    anomalies: list[str] = []
    header, body = decode_request(frame, anomalies=anomalies)
    assert (header.api_key, header.api_version, header.client_id) == (3, 12, "rdkafka")
    assert body.topics is None and body.allow_auto_topic_creation is False
    assert anomalies == ["3 bytes after the body (ignored, as Kafka does)"]


def test_a_lenient_read_takes_tags_in_any_order_the_last_repeat_winning():
    header = i16(18) + i16(3) + i32(1) + str16("c") + uvarint(2) + uvarint(5) + uvarint(0) + uvarint(4) + uvarint(0)
    anomalies: list[str] = []
    got, body = decode_request(header + cstr("a") + cstr("b") + NO_TAGS, anomalies=anomalies)
    assert body.client_software_name == "a" and body.client_software_version == "b"
    assert anomalies == ["tagged field 4 after 5 (out of order or repeated)"]
    # a repeated known tag in a body: the later value wins, as in Kafka's generated switch
    meta = i16(3) + i16(12) + i32(2) + str16("c") + NO_TAGS
    body_tags = uvarint(2) + uvarint(0) + uvarint(1) + b"\x00" + uvarint(0) + uvarint(1) + b"\x00"
    anomalies = []
    decode_request(meta + carr(None) + b"\x00\x00" + body_tags, anomalies=anomalies)
    assert anomalies == ["tagged field 0 after 0 (out of order or repeated)"]


def test_a_lenient_read_still_refuses_what_kafka_refuses():
    valid = _h1(12, 0) + str16("g") + i32(1) + str16("m")
    for cut in range(10, len(valid)):
        with pytest.raises(CorruptFrameError):
            decode_request(valid[:cut], anomalies=[])
    with pytest.raises(UnsupportedCodecVersionError):
        decode_request(_h1(12, 99) + str16("g"), anomalies=[])
