"""The fuzz campaign: its CI variant, and the parts it rests on.

``test_a_fuzz_campaign_leaves_the_emulator_unharmed`` runs benchmarks/fuzz.py's campaign for
25,000 frames (about 15-25 s on 2 cores) against ``broker-emu serve`` as a subprocess: no
handler error, no death, every answer decodable, and a normal produce + fetch afterwards. The
long run (10^6 frames) and its figures: docs/fuzzing.md.
"""

from __future__ import annotations

import random

import pytest

from benchmarks.fuzz import Ledger, Options, Pipeline, run_campaign, table
from benchmarks.fuzz_frames import CATEGORIES, Frame, FrameSource, framed, hostile_length
from benchmarks.fuzz_pool import Pool, load_corpus
from broker_emu.handler_catalog import register_all
from broker_emu.registry import REGISTRY
from client.protocol import ProtocolError
from client.protocol.codec import decode_request, encode_request
from tests.client.protocol.corpus_catalog import Refused, emulator_reads


@pytest.fixture(scope="module")
def pool() -> Pool:
    register_all()
    advertised = {int(k): (r.min_version, r.max_version) for k, r in REGISTRY.items()}
    return Pool.build(advertised, seed=3, examples=2, corpus=load_corpus())


def frames_of(pool: Pool, seed: int, n: int) -> list[Frame]:
    source = FrameSource(pool, random.Random(seed))
    out: list[Frame] = []
    while len(out) < n:
        out.extend(source.batch(8))
    return out


# -- the frames ------------------------------------------------------------------------------------

def test_a_seed_gives_the_same_frames(pool):
    assert [f.data for f in frames_of(pool, 5, 500)] == [f.data for f in frames_of(pool, 5, 500)]
    assert [f.data for f in frames_of(pool, 5, 500)] != [f.data for f in frames_of(pool, 6, 500)]


def test_benign_frames_are_read_by_the_emulator_and_cover_every_advertised_version(pool):
    seen = set()
    refused = []
    for f in frames_of(pool, 1, 6000):
        if f.category not in ("valid", "corpus"):
            continue
        try:
            header, _, _ = emulator_reads(f.data[4:])
        except Refused as exc:
            refused.append((f.kind, str(exc)))
            continue
        seen.add((header.api_key, header.api_version))
    assert refused == []
    assert set(pool.bodies) - seen == set(), "an advertised version never sent"


def test_every_category_and_fuzzy_frames_only_last_in_a_batch(pool):
    source = FrameSource(pool, random.Random(2))
    seen = set()
    for _ in range(2000):
        batch = source.batch(8)
        seen |= {f.category for f in batch}
        fuzzy = [i for i, f in enumerate(batch) if f.category not in ("valid", "corpus") and f.kind != "flood"]
        assert fuzzy in ([], [len(batch) - 1]), [f.kind for f in batch]
    assert seen == set(CATEGORIES)


def test_a_hostile_length_rewrites_the_prefix_of_the_marked_field():
    # Heartbeat v0: group_id is the first string; its int16 length claims 0x7fff or another lie
    body = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    claims = set()
    for seed in range(60):
        payload = hostile_length(random.Random(seed), 12, 0, body, 7, "c")
        if payload is None:
            continue
        with pytest.raises(ProtocolError):
            decode_request(payload)
        claims.add(payload)
    assert len(claims) > 5


# -- the accounting --------------------------------------------------------------------------------

def frame(category: str, cid: int, silent: bool = False) -> Frame:
    return Frame(category, "k", framed(encode_request(18, 0, cid, "c", {})[4:]), silent=silent)


def answer(cid: int) -> bytes:
    body = cid.to_bytes(4, "big") + bytes(6)   # ApiVersions v0: error 0, no keys
    return len(body).to_bytes(4, "big") + body


def test_answers_settle_frames_in_order_and_a_close_blames_the_first_unanswered():
    ledger = Ledger()
    pipe = Pipeline(ledger, (0, 4))
    silent, a, b, c = frame("valid", 1, silent=True), frame("valid", 2), frame("corpus", 3), frame("mutated", 4)
    pipe.sent([silent, a, b, c])
    pipe.received(answer(2)[:5])
    assert pipe.awaiting() and ledger.total("answered") == 0
    pipe.received(answer(2)[5:] + answer(3))
    assert (ledger.by_category["valid"]["silent"], ledger.by_category["valid"]["answered"]) == (1, 1)
    assert ledger.by_category["corpus"]["answered"] == 1 and ledger.bad_answer_count == 0
    pipe.ended("closed")
    assert ledger.by_category["mutated"]["closed"] == 1
    pipe.sent([frame("valid", 5), frame("random", 6)])
    pipe.ended("closed")
    assert (ledger.by_category["valid"]["closed"], ledger.by_category["random"]["lost"]) == (1, 1)
    assert ledger.total("sent") == 6 == sum(ledger.total(o) for o in ("answered", "closed", "lost", "silent"))


def test_an_undecodable_answer_is_counted_as_bad_and_an_unknown_one_as_unmatched():
    ledger = Ledger()
    pipe = Pipeline(ledger, (0, 4))
    pipe.sent([frame("valid", 9)])
    pipe.received(b"\x00\x00\x00\x08" + (77).to_bytes(4, "big") + bytes(4))   # nobody's correlation id
    assert ledger.unmatched_answers == 1 and pipe.awaiting()
    pipe.received(b"\x00\x00\x00\x05" + (9).to_bytes(4, "big") + b"\x00")    # ApiVersions cut short
    assert ledger.bad_answer_count == 1 and ledger.total("answered") == 1
    assert "CorruptFrameError" in ledger.bad_answers[0]["error"]


# -- what the campaign found (docs/fuzzing.md) -------------------------------------------------------

def send_and_read(bootstrap: str, frame: bytes) -> bytes:
    """One frame over real TCP; the answer without its size prefix, or b"" when the broker closes."""
    import socket

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = s.recv(1 << 16)
            if not chunk:
                return b""
            data += chunk
    return data[4:]


def test_produce_with_bytes_after_its_batch_that_are_no_batch_is_invalid_record_not_a_handler_error():
    """Found by the fuzz campaign: parse_single_batch counted the batches for its message and
    raised CorruptRecordBatchError on a second one with magic 0 (UNKNOWN_SERVER_ERROR). Kafka's
    ProduceRequest.validateRecords answers INVALID_RECORD."""
    from broker_emu.runtime import run_cluster_in_thread
    from client.protocol.codec import decode_response

    frame = bytes.fromhex(  # Produce v3, acks=1, t-0: one good batch, then 17 zero bytes
        "0000007c0000000300000007000163ffff00010000006400000001000174000000010000000000000056000000000000"
        "000000000039ffffffff029e41f0b200000000000000000000000000000000000000000000ffffffffffffffffffffffff"
        "ffff000000010e000000010276000000000000000000000000000000000000")
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        answer = send_and_read(tc.bootstrap, frame)
    part = decode_response(0, 3, answer)[1].responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (87, -1)


# -- the CI variant --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_fuzz_campaign_leaves_the_emulator_unharmed():
    s = run_campaign(Options(frames=25_000, seconds=50, seed=13, examples=4, progress=0))
    print(table(s))
    assert s["frames"] >= 20_000, "fewer frames than the variant is sized for: a slow emulator?"
    assert (s["handler_errors"], s["handler_errors_logged"], s["handler_errors_in_ring"]) == (0, 0, 0), \
        s["handler_error_signatures"]
    assert s["deaths"] == 0 and s["alive_at_end"], s["stderr_tail"]
    assert s["round_trip"]["ok"], s["round_trip"]
    assert s["bad_answers"] == 0, s["bad_answer_examples"]
    assert s["unmatched_answers"] == 0
    for category, counts in s["by_category"].items():
        assert counts["sent"] > 1000, category
    assert s["answers"] > 8000 and s["closes"] > 4000
    assert s["memory"]["peak_rss"] < 512 << 20
