"""The frames of the fuzz campaign (benchmarks/fuzz.py): pure, seeded, no I/O.

Theory of operation
-------------------
A ``Pool`` (benchmarks/fuzz_pool.py) is built once per campaign: for every (API, version) the emulator advertises, a few
request bodies drawn from the hypothesis strategies of the codec tests
(``tests/client/protocol/strategies.py``, one ``@seed`` per campaign seed, so the pool is reproducible);
for every version the codec knows but the emulator does not serve, a couple more; and the
checked-in corpus of real clients' request frames (``tests/client/protocol/corpus``). Bodies are kept
as values, not bytes: each use *steers* one first (``Steer``: topic names towards ``t`` and a
few scratch topics, partitions towards 0-2, timeouts and waits down to at most 250 ms so a
pipeline keeps moving, records towards real record batches in every codec, groups towards a
handful of ids) and encodes it with the codec, so valid frames reach the handlers' interesting
paths instead of stopping at UNKNOWN_TOPIC_OR_PARTITION.

A ``FrameSource`` (one per connection, its own ``random.Random``) hands out batches: zero or
more *benign* frames (``valid``: a steered pool body; ``corpus``: a real client's frame) and at
most one *fuzzy* frame, always last, because it may make the broker close the connection and
anything pipelined behind it would be lost:

- ``mutated``: a valid or corpus frame with 1-3 byte-level mutations stacked (bit flips,
  interesting bytes and int16/int32/varint values, truncation, extension, insertion, deletion,
  duplication, splicing two frames, another version or API key in the header);
- ``hostile``: huge or negative lengths and counts inside an otherwise valid frame (a marker
  string, bytes or int array is encoded and its length or count prefix rewritten), corrupt
  record batches with a correct CRC, hostile size prefixes (beyond socket.request.max.bytes,
  negative, zero, shorter than a header, longer than what follows), versions and APIs the
  emulator does not serve, a 32 KB client id, and floods of 100 pipelined requests;
- ``random``: random bytes behind an honest size prefix, random bytes behind a valid header,
  and a random byte stream (prefix included).

A frame whose size prefix claims more than is sent carries ``eof``: the sender half-closes after
it, so the broker sees the stream end inside the frame instead of waiting for bytes forever.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.fuzz_pool import PRODUCE, Pool, Steer
from client.protocol.codec import decode_request, encode_request
from client.protocol.messages import ALL_APIS

CATEGORIES = ("valid", "corpus", "mutated", "hostile", "random")
WEIGHTS = (30, 15, 30, 15, 10)  # per frame drawn, in CATEGORIES order
BENIGN = frozenset({"valid", "corpus"})
MAX_REQUEST_BYTES = 104857600   # socket.request.max.bytes (broker_emu/config.py)
CLIENT_IDS = ("fuzz", "", None, "rdkafka", "kafka-python-2.0", "fuzz-\u00e9\u4e2d")
MARK = "FzQ7mK"                       # a marker no generated text or client id contains
MARK_INT = 0x5A17C3E9
I16, I32, U32 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">I")


@dataclass(slots=True)
class Frame:
    category: str
    kind: str                  # the API for benign frames, the operator for fuzzy ones
    data: bytes                # what goes on the wire, size prefix included
    silent: bool = False       # no answer is expected (Produce acks=0)
    eof: bool = False          # the prefix claims more than is sent: half-close after it

    @property
    def claimed(self) -> tuple[int, int] | None:
        """The (api key, version) the header claims, when there are four bytes of it."""
        if len(self.data) < 8:
            return None
        return I16.unpack_from(self.data, 4)[0], I16.unpack_from(self.data, 6)[0]

    @property
    def correlation_id(self) -> int | None:
        return I32.unpack_from(self.data, 8)[0] if len(self.data) >= 12 else None


def framed(payload: bytes) -> bytes:
    return I32.pack(len(payload)) + payload


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def is_silent(payload: bytes) -> bool:
    """A Produce with acks=0, as the broker would read it (no answer comes back)."""
    if len(payload) < 4 or I16.unpack_from(payload, 0)[0] != PRODUCE:
        return False
    try:
        return decode_request(payload, anomalies=[])[1].acks == 0
    except Exception:  # noqa: BLE001 — anything the codec refuses is closed, not silent
        return False


# -- hostile lengths and counts inside a valid body -------------------------------------------------

def length_sites(key: int, version: int, body: Mapping[str, Any]) -> list[tuple[str, tuple]]:
    """Where a length or count can be rewritten: (what, path to the field in ``body``)."""
    from tests.client.protocol.strategies import flexible, message_fields, on_wire

    flex = flexible(key, version)
    out: list[tuple[str, tuple]] = []

    def walk(fields, value, path):
        for f in fields:
            if not on_wire(f, version, flex) or not isinstance(value, Mapping) or f.name not in value:
                continue
            v, p, et = value[f.name], path + (f.name,), f.element_type
            if f.is_array and et == "struct":
                first = next((g for g in f.fields if g.present_in(version) and not g.tagged_in(version)), None)
                if first is not None and first.type == "string":
                    out.append((f"count:{first.name}", p))
                for i, item in enumerate(v or ()):
                    walk(f.fields, item, p + (i,))
            elif f.is_array and et in ("string", "int32"):
                out.append((f"count:{et}", p))
            elif et == "struct" and v is not None:
                walk(f.fields, v, p)
            elif not f.is_array and et in ("string", "bytes", "records"):
                out.append(("string" if et == "string" else "bytes", p))

    walk(message_fields(key, "request"), body, ())
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]
    out = dict(value)
    out[head] = _replace(value[head], rest, new)
    return out


HOSTILE_I16 = (-2, -32768, 0x7FFF, -1)
HOSTILE_I32 = (-2, -(2**31), 2**31 - 1, 2**30, 0x10000, -1)
HOSTILE_UVARINT = (uvarint(2**31), uvarint(2**32 - 1), uvarint(2**35), b"\x00", uvarint(2**31 - 1),
                   b"\xff" * 5 + b"\x0f", b"\x80" * 10 + b"\x01", b"\xff\xff\xff\xff\x7f")


def hostile_length(rng: random.Random, key: int, version: int, body: Mapping[str, Any],
                   correlation_id: int, client_id: str | None) -> bytes | None:
    """A valid frame whose one length or count (picked at random) claims something hostile."""
    from tests.client.protocol.strategies import flexible

    sites = length_sites(key, version, body)
    if not sites:
        return None
    what, path = rng.choice(sites)
    mark = MARK.encode()
    if what == "count:int32":
        value, mark = [MARK_INT], I32.pack(MARK_INT)
    elif what == "count:string":
        value = [MARK]
    elif what.startswith("count:"):
        value = [{what[6:]: MARK}]
    else:
        value = MARK if what == "string" else mark
    try:
        payload = encode_request(key, version, correlation_id, client_id, _replace(body, path, value))[4:]
    except Exception:  # noqa: BLE001 — a nested path the codec will not take: no hostile frame
        return None
    at = payload.find(mark)
    if at < 0:
        return None
    flex = flexible(key, version)
    n = len(mark)
    if what == "count:int32":
        lenpos, width = at, 0          # no length of its own: the count comes just before it
    elif flex:
        lenpos, width = at - 1, 1
    else:
        lenpos, width = (at - 2, 2) if what != "bytes" else (at - 4, 4)
    if what.startswith("count:"):
        start, stop, claim_width = (lenpos - 1, lenpos, 1) if flex else (lenpos - 4, lenpos, 4)
        expected = 2 if flex else 1     # one element
    else:
        start, stop, claim_width = lenpos, lenpos + width, width
        expected = n + 1 if flex else n
    if start < 0 or int.from_bytes(payload[start:stop], "big", signed=True) != expected:
        return None   # not where the encoding put it (a tagged field's size prefix, say)
    if claim_width == 1:
        claim = rng.choice(HOSTILE_UVARINT)
    elif claim_width == 2:
        claim = I16.pack(rng.choice(HOSTILE_I16 + (n + 1, n + 200)))
    else:
        claim = I32.pack(rng.choice(HOSTILE_I32 + (n + 1,)))
    out = payload[:start] + claim + payload[stop:]
    if rng.random() < 0.3:
        out = out[: start + len(claim) + rng.randrange(0, n + 4)]   # and the bytes run out
    return out


def hostile_batch(rng: random.Random, batch: bytes) -> bytes:
    """A record batch with one header field or record byte made hostile; the CRC fixed four
    times in five, so the broker's parse goes past the CRC check."""
    import crc32c

    b = bytearray(batch)
    field = rng.choice(("length", "magic", "attributes", "count", "last_delta", "record_len", "byte"))
    if field == "length":
        b[8:12] = I32.pack(rng.choice(HOSTILE_I32 + (len(b) - 11, len(b) - 13, 0)))
    elif field == "magic":
        b[16] = rng.choice((0, 1, 3, 0xFF))
    elif field == "attributes":
        b[21:23] = I16.pack(rng.choice((5, 6, 7, 0x7F, -1, 0x20, 0x10)))
    elif field == "count":
        b[57:61] = I32.pack(rng.choice(HOSTILE_I32 + (0, 1000)))
    elif field == "last_delta":
        b[23:27] = I32.pack(rng.choice(HOSTILE_I32))
    elif field == "record_len" and len(b) > 61:
        b[61:62] = rng.choice((b"\xff\xff\xff\xff\x0f", b"\x01", b"\xfe\xff\xff\xff\x0f", b"\x80" * 10))
    elif len(b) > 61:
        pos = rng.randrange(61, len(b))
        b[pos] ^= rng.randrange(1, 256)
    if rng.random() < 0.8 and len(b) >= 21:
        b[17:21] = U32.pack(crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


# -- mutations -------------------------------------------------------------------------------------

INTERESTING_BYTES = (0x00, 0xFF, 0x7F, 0x80, 0x01)
INTERESTING_I16 = (0, -1, -2, 1, 0x7FFF, -32768)
INTERESTING_I32 = (0, -1, -2, 1, 2**31 - 1, -(2**31), 0xFFFF, 0x10000)
HOSTILE_KINDS = ("length", "records", "prefix", "unserved", "unknown_api", "client_id", "flood")
HOSTILE_WEIGHTS = (30, 20, 20, 8, 8, 4, 0.4)
MUTATIONS = ("flip", "byte", "int16", "int32", "varint", "truncate", "extend", "insert", "delete",
             "duplicate", "splice", "version", "api_key")


def mutate(rng: random.Random, data: bytes, other: bytes, op: str) -> bytes:
    """One mutation of a frame without its size prefix (``other``: a second frame, for splices)."""
    b = bytearray(data)
    pos = rng.randrange(len(b)) if b else 0
    if op == "flip" and b:
        b[pos] ^= 1 << rng.randrange(8)
    elif op == "byte" and b:
        b[pos] = rng.choice(INTERESTING_BYTES)
    elif op == "int16":
        b[pos:pos + 2] = I16.pack(rng.choice(INTERESTING_I16))
    elif op == "int32":
        b[pos:pos + 4] = I32.pack(rng.choice(INTERESTING_I32))
    elif op == "varint":
        b[pos:pos + 1] = rng.choice(HOSTILE_UVARINT + (b"\x00", b"\x01", b"\x7f"))
    elif op == "truncate":
        del b[rng.randrange(len(b) + 1):]
    elif op == "extend":
        b += rng.randbytes(rng.randrange(1, 64))
    elif op == "insert":
        b[pos:pos] = rng.randbytes(rng.randrange(1, 16))
    elif op == "delete":
        del b[pos:pos + rng.randrange(1, 16)]
    elif op == "duplicate" and b:
        end = min(len(b), pos + rng.randrange(1, 32))
        b[end:end] = b[pos:end]
    elif op == "splice":
        b = b[:pos] + other[rng.randrange(len(other) + 1):]
    elif op == "version" and len(b) >= 4:
        key = I16.unpack_from(b, 0)[0]
        lo, hi = ALL_APIS[key].version_range if key in ALL_APIS else (0, 0)
        b[2:4] = I16.pack(rng.choice((rng.randint(lo, hi), hi + 1, lo - 1, 0x7FFF, -1)))
    elif op == "api_key" and len(b) >= 2:
        b[0:2] = I16.pack(rng.choice((*ALL_APIS, -1, 99, 0x7FFF)))
    return bytes(b)


def with_correlation_id(payload: bytes, correlation_id: int) -> bytes:
    return payload[:4] + I32.pack(correlation_id) + payload[8:] if len(payload) >= 8 else payload


# -- a connection's frames -------------------------------------------------------------------------

class FrameSource:
    """Batches of frames for one connection: benign ones first, at most one fuzzy one last."""

    def __init__(self, pool: Pool, rng: random.Random, first_correlation_id: int = 1):
        self.pool, self.rng = pool, rng
        self.steer = Steer(rng, pool.topic_ids)
        self.cases = sorted(pool.bodies)
        self.unserved = sorted(pool.unserved)
        self.next_cid = first_correlation_id
        self.recent: list[bytes] = []   # valid frames sent lately: bases for mutations

    def cid(self) -> int:
        cid, self.next_cid = self.next_cid, (self.next_cid + 1) & 0x7FFFFFFF
        return cid

    def batch(self, max_len: int = 8) -> list[Frame]:
        frames: list[Frame] = []
        while len(frames) < max_len:
            category = self.rng.choices(CATEGORIES, WEIGHTS)[0]
            if category in BENIGN:
                frames.append(self.valid() if category == "valid" else self.corpus())
                continue
            fuzzy = getattr(self, category)()
            frames.extend(fuzzy if isinstance(fuzzy, list) else [fuzzy])
            break
        return frames

    # benign
    def client_id(self) -> str | None:
        return self.rng.choice(CLIENT_IDS)

    def encode_valid(self, key: int, version: int, body: Mapping[str, Any]) -> tuple[bytes, Mapping[str, Any]]:
        cid, client_id = self.cid(), self.client_id()
        try:
            steered = self.steer.body(key, body)
            return encode_request(key, version, cid, client_id, steered), steered
        except Exception:  # noqa: BLE001 — a steered value this version cannot carry: the body as drawn
            return encode_request(key, version, cid, client_id, body), body

    def valid(self) -> Frame:
        key, version = self.rng.choice(self.cases)
        data, body = self.encode_valid(key, version, self.rng.choice(self.pool.bodies[(key, version)]))
        if len(self.recent) < 256:
            self.recent.append(data[4:])
        else:
            self.recent[self.rng.randrange(256)] = data[4:]
        return Frame("valid", f"{ALL_APIS[key].name} v{version}", data, silent=key == PRODUCE and body.get("acks") == 0)

    def corpus(self) -> Frame:
        payload = with_correlation_id(self.rng.choice(self.pool.corpus), self.cid())
        key, version = I16.unpack_from(payload, 0)[0], I16.unpack_from(payload, 2)[0]
        return Frame("corpus", f"{ALL_APIS[key].name} v{version}", framed(payload), silent=is_silent(payload))

    def base(self) -> bytes:
        if self.recent and self.rng.random() < 0.5:
            return self.rng.choice(self.recent)
        if self.pool.corpus:
            return self.rng.choice(self.pool.corpus)
        return self.valid().data[4:]

    # fuzzy
    def mutated(self) -> Frame:
        payload = self.base()
        ops = [self.rng.choice(MUTATIONS) for _ in range(self.rng.choice((1, 1, 2, 3)))]
        for op in ops:
            payload = mutate(self.rng, payload, self.base(), op)
        payload = with_correlation_id(payload, self.cid())
        return Frame("mutated", "+".join(ops), framed(payload), silent=is_silent(payload))

    def hostile(self) -> Frame | list[Frame]:
        kind = self.rng.choices(HOSTILE_KINDS, HOSTILE_WEIGHTS)[0]
        return getattr(self, f"hostile_{kind}")()

    def hostile_length(self) -> Frame:
        key, version = self.rng.choice(self.cases)
        body = self.steer.body(key, self.rng.choice(self.pool.bodies[(key, version)]))
        payload = hostile_length(self.rng, key, version, body, self.cid(), self.client_id())
        if payload is None:
            return self.hostile_records()
        return Frame("hostile", "length", framed(payload), silent=is_silent(payload))

    def hostile_records(self) -> Frame:
        rng = self.rng
        version = rng.randint(3, 11)
        batch = hostile_batch(rng, self.steer.records())
        body = {"transactional_id": None, "acks": rng.choice((-1, 1)), "timeout_ms": 100,
                "topic_data": [{"name": "t", "partition_data": [{"index": rng.randrange(3), "records": batch}]}]}
        return Frame("hostile", "records", encode_request(PRODUCE, version, self.cid(), "fuzz", body))

    def hostile_prefix(self) -> Frame:
        rng = self.rng
        payload = self.base()
        kind = rng.choice(("huge", "negative", "zero", "short", "long", "long"))
        if kind == "huge":
            return Frame("hostile", "prefix:huge", I32.pack(rng.choice((MAX_REQUEST_BYTES + 1, 2**31 - 1))) + payload, eof=True)
        if kind == "negative":
            return Frame("hostile", "prefix:negative", I32.pack(rng.choice((-1, -2, -(2**31)))) + payload, eof=True)
        if kind == "zero":
            return Frame("hostile", "prefix:zero", I32.pack(0))
        if kind == "short":
            n = rng.randrange(1, 10)
            return Frame("hostile", "prefix:short", I32.pack(n) + payload[:n].ljust(n, b"\x00"))
        extra = rng.choice((1, 100, 10_000, 1 << 20, 50_000_000))
        sent = payload + bytes(min(extra - 1, rng.choice((0, 100, 1 << 20))))
        return Frame("hostile", "prefix:long", I32.pack(len(payload) + extra) + sent, eof=True)

    def hostile_unserved(self) -> Frame:
        if not self.unserved:
            return self.hostile_unknown_api()
        key, version = self.rng.choice(self.unserved)
        body = self.rng.choice(self.pool.unserved[(key, version)])
        data = encode_request(key, version, self.cid(), self.client_id(), body)
        return Frame("hostile", "unserved", data)

    def hostile_unknown_api(self) -> Frame:
        key = self.rng.choice((-1, 99, 1000, 0x7FFF, -(2**15), self.rng.randrange(70, 0x7FFF)))
        payload = I16.pack(key) + I16.pack(self.rng.randrange(0, 20)) + I32.pack(self.cid()) + I16.pack(-1)
        return Frame("hostile", "unknown_api", framed(payload + self.rng.randbytes(self.rng.randrange(0, 32))))

    def hostile_client_id(self) -> Frame:
        """A valid Metadata or ApiVersions request with the longest client id there is."""
        key, version = self.rng.choice(((3, 1), (3, 12), (18, 0), (18, 3)))
        client_id = self.rng.choice(("c" * 0x7FFF, "\u00e9" * (0x7FFF // 2)))
        body = {"topics": []} if key == 3 else {}
        return Frame("hostile", "client_id", encode_request(key, version, self.cid(), client_id, body))

    def hostile_flood(self) -> list[Frame]:
        """100 small requests pipelined at once: the broker reads ahead only so far."""
        return [Frame("hostile", "flood", encode_request(18, self.rng.randrange(0, 4), self.cid(), "flood", {}))
                for _ in range(100)]

    def random(self) -> Frame:
        rng = self.rng
        kind = rng.choice(("raw", "header", "stream"))
        junk = rng.randbytes(rng.randrange(0, 96))
        if kind == "raw":
            return Frame("random", "raw", framed(junk))
        if kind == "header":
            key, version = rng.choice(self.cases)
            flexible_header = ALL_APIS[key].is_flexible(version)
            header = I16.pack(key) + I16.pack(version) + I32.pack(self.cid()) + I16.pack(4) + b"fuzz"
            return Frame("random", "header", framed(header + (b"\x00" if flexible_header else b"") + junk))
        return Frame("random", "stream", rng.randbytes(4) + junk, eof=True)
