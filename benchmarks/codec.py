"""Codec benchmark (not a test): each figure next to a floor measured in the same run.

The floor is a minimal hand-written ``struct`` parse of the same bytes: the fastest pure-Python
decode we could reasonably write, so the ratio says what the declarative codec costs.
Run: .venv/bin/python -m benchmarks.codec
"""

from __future__ import annotations

import struct
import sys
import time
import uuid

from client.protocol import ApiKey
from client.protocol.codec import decode_request, decode_request_header, decode_response, encode_request, encode_response


def rate(fn, min_seconds: float = 0.5) -> float:
    """Calls per second of ``fn`` (best of 3 rounds)."""
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while True:
            for _ in range(100):
                fn()
            n += 100
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds / 3:
                break
        best = max(best, n / elapsed)
    return best


_HDR = struct.Struct(">hhih")


def floor_header(frame: bytes):
    api, ver, corr, n = _HDR.unpack_from(frame, 0)
    return api, ver, corr, frame[10:10 + n].decode()


def metadata_response(topics: int = 100, partitions: int = 12) -> dict:
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": i, "host": "127.0.0.1", "port": 9092 + i, "rack": None} for i in range(3)],
        "cluster_id": "broker-emu",
        "controller_id": 0,
        "topics": [
            {
                "error_code": 0, "name": f"topic-{t}", "topic_id": uuid.UUID(int=t + 1), "is_internal": False,
                "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 0,
                     "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
                    for p in range(partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in range(topics)
        ],
    }


def floor_metadata_walk(body: bytes) -> int:
    """Walk the same Metadata v12 bytes with struct calls only (no objects built): a floor."""
    pos = 4 + 1 + 4  # correlation id, header tags, throttle

    def uvar(p):
        v = s = 0
        while True:
            b = body[p]; p += 1
            v |= (b & 0x7F) << s
            if not b & 0x80:
                return v, p
            s += 7

    n, pos = uvar(pos)
    for _ in range(n - 1):
        pos += 4
        ln, pos = uvar(pos); pos += ln - 1
        pos += 4
        ln, pos = uvar(pos); pos += max(ln - 1, 0)
        pos += 1
    ln, pos = uvar(pos); pos += max(ln - 1, 0)
    pos += 4
    nt, pos = uvar(pos)
    count = 0
    for _ in range(nt - 1):
        pos += 2
        ln, pos = uvar(pos); pos += ln - 1
        pos += 16 + 1
        np_, pos = uvar(pos)
        for _ in range(np_ - 1):
            struct.unpack_from(">hiii", body, pos); pos += 14
            for _ in range(3):
                k, pos = uvar(pos); pos += 4 * (k - 1)
            pos += 1
            count += 1
        pos += 4 + 1
    return count


def main() -> None:
    print(f"codec benchmark (python {sys.version.split()[0]})")
    frame = encode_request(ApiKey.METADATA, 9, 42, "bench-client", {"topics": [{"name": "t"}]})[4:]
    ours = rate(lambda: decode_request_header(frame))
    floor = rate(lambda: floor_header(frame))
    print(f"request header parse: {ours:,.0f}/s (floor {floor:,.0f}/s, ratio {ours / floor:.2f}; target >= 200,000/s)")

    resp = metadata_response()
    t0 = time.perf_counter(); n = 20
    for _ in range(n):
        data = encode_response(ApiKey.METADATA, 12, 1, resp)
    enc = (time.perf_counter() - t0) / n
    body = data[4:]
    t0 = time.perf_counter()
    for _ in range(n):
        decode_response(ApiKey.METADATA, 12, body)
    dec = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        walked = floor_metadata_walk(body)
    fl = (time.perf_counter() - t0) / n
    assert walked == 1200
    print(f"Metadata v12 response, 100 topics x 12 partitions ({len(data):,} B): encode {enc * 1e3:.2f} ms, "
          f"decode {dec * 1e3:.2f} ms (floor walk {fl * 1e3:.2f} ms, decode ratio {dec / fl:.2f}x)")

    batch = bytes(61) + b"x" * (1 << 20)
    produce = {"acks": -1, "timeout_ms": 30000, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    pframe = encode_request(ApiKey.PRODUCE, 9, 1, "p", produce)[4:]
    t0 = time.perf_counter(); n = 50
    for _ in range(n):
        decode_request(pframe)
    pdec = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        floor_header(pframe); bytes(pframe[40:])
    pfl = (time.perf_counter() - t0) / n
    print(f"Produce v9 request with a 1 MB batch (opaque): decode {pdec * 1e6:.0f} us (floor: header + one copy {pfl * 1e6:.0f} us, ratio {pdec / pfl:.2f}x)")

    from client.protocol import records

    recs = [records.Record(b"v" * 100, timestamp=1_700_000_000_000) for _ in range(1000)]
    enc_rate = 1000 * rate(lambda: records.encode_batch(recs), 1.0)
    batch = records.encode_batch(recs)
    body = batch[61:]

    def floor_walk() -> int:
        # minimal pass over the same record bytes: read each zigzag length, skip the record
        pos = n = 0
        while pos < len(body):
            raw = shift = 0
            while True:
                b = body[pos]
                pos += 1
                raw |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
            pos += raw >> 1
            n += 1
        return n

    assert floor_walk() == 1000
    floor_rate = 1000 * rate(floor_walk, 1.0)
    dec_rate = 1000 * rate(lambda: records.decode_batch(batch), 1.0)
    print(f"record batch, 1,000 x 100 B records: encode {enc_rate:,.0f} records/s (target >= 300,000/s), "
          f"decode {dec_rate:,.0f} records/s; floor walk {floor_rate:,.0f} records/s "
          f"(encode ratio {enc_rate / floor_rate:.2f})")


if __name__ == "__main__":
    main()
