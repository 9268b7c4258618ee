"""Runs of same-layout records read in bulk (client.protocol.record_runs) give exactly what a
plain record-by-record reader gives: batches built by hand (so offset deltas may skip, widths
change mid-run, a header or a longer value break a run) are read by an independent reader
written out here and by ``decode_columns``/``decode_batch``."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol import record_reader
from client.protocol import records as R
from tests.broker_emu.crafted import crafted_batch, record, recrc


def read_zz(buf, pos):
    shift = u = 0
    while True:
        b = buf[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (u >> 1) ^ -(u & 1), pos


def raw_batch(rows, base_offset=1000, base_ts=50_000, attributes=0):
    """rows: (offset delta, timestamp delta, key, value, headers) written as Kafka lays them out."""
    body = b"".join(record(value, key, ts, off, [(hk.encode(), hv) for hk, hv in headers])
                    for off, ts, key, value, headers in rows)
    return crafted_batch(body, count=len(rows), attributes=attributes, base_timestamp=base_ts,
                         max_timestamp=base_ts + 1, base_offset=base_offset)


def reference(batch):
    """(offset, timestamp, key, value, headers) of each record, read one field at a time."""
    base_offset, = struct.unpack_from(">q", batch, 0)
    attributes, = struct.unpack_from(">h", batch, 21)
    base_ts, max_ts = struct.unpack_from(">qq", batch, 27)
    count, = struct.unpack_from(">i", batch, 57)
    pos, out = 61, []
    for _ in range(count):
        length, pos = read_zz(batch, pos)
        end = pos + length
        ts, p = read_zz(batch, pos + 1)
        off, p = read_zz(batch, p)
        fields = []
        for _ in range(2):
            n, p = read_zz(batch, p)
            fields.append(None if n < 0 else bytes(batch[p:p + n]))
            p += max(n, 0)
        nh, p = read_zz(batch, p)
        headers = []
        for _ in range(nh):
            n, p = read_zz(batch, p)
            hk = bytes(batch[p:p + n]).decode()
            p += n
            n, p = read_zz(batch, p)
            headers.append((hk, None if n < 0 else bytes(batch[p:p + n])))
            p += max(n, 0)
        assert p == end
        pos = end
        out.append((base_offset + off, max_ts if attributes & 0x08 else base_ts + ts, fields[0], fields[1], tuple(headers)))
    return out


def ours(batch):
    _, c = R.decode_columns(batch)
    assert len({len(c.offsets), len(c.timestamps), len(c.keys), len(c.values), len(c.headers)}) == 1
    got = list(zip(c.offsets, c.timestamps, c.keys, c.values, c.headers))
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in R.decode_batch(batch)[1]] == got
    return got


FIELD = st.one_of(st.none(), st.sampled_from([0, 1, 5, 63, 64, 100, 8191, 8192]).map(lambda n: bytes(n % 251 for n in range(n))))


@st.composite
def runs(draw):
    """A template record repeated, with some records changed in ways that must end a run."""
    key, value = draw(FIELD), draw(FIELD)
    n = draw(st.integers(1, 140))
    first_delta = draw(st.sampled_from([0, 0, 30, 62, 63, 64, 8150]))
    ts_base = draw(st.sampled_from([0, 3, -3, 63, -64, 64, 8000, 9000]))
    varying_ts = draw(st.booleans())
    rows = [[first_delta + i, ts_base + (i % 3 if varying_ts else 0), key, value, ()] for i in range(n)]
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, n - 1))
        change = draw(st.sampled_from(["skip", "ts-wide", "longer", "header", "key", "negative"]))
        row = rows[i]
        if change == "skip":
            for r in rows[i:]:
                r[0] += 1
        elif change == "ts-wide":
            row[1] = 70_000
        elif change == "longer":
            row[3] = (row[3] or b"") + b"!"
        elif change == "header":
            row[4] = (("h", b"v"),)
        elif change == "key":
            row[2] = b"K" * (len(row[2] or b"") + 1)
        else:
            row[0] = -1
    return [tuple(r) for r in rows]


@given(runs())
@settings(max_examples=400, deadline=None)
def test_bulk_runs_read_what_a_record_by_record_reader_reads(rows):
    batch = raw_batch(rows)
    assert ours(batch) == reference(batch)


@pytest.mark.parametrize("n, value", [(9000, b"v" * 100), (8300, None), (200, b""), (100, b"x" * 8191)])
def test_runs_across_the_one_and_two_byte_offset_deltas_and_beyond(n, value):
    """Offset deltas 63 -> 64 and 8191 -> 8192 change the records' layout: a run ends there."""
    rows = [(i, i // 1000, b"key", value, ()) for i in range(n)]
    batch = raw_batch(rows)
    assert ours(batch) == reference(batch)


def test_log_append_time_runs_take_the_batch_time():
    batch = raw_batch([(i, i % 5, None, b"v" * 10, ()) for i in range(300)], attributes=0x08)
    got = ours(batch)
    assert got == reference(batch) and {ts for _, ts, *_ in got} == {50_001}


def test_a_run_that_runs_past_the_records_count_is_refused():
    """A count smaller than the records present leaves bytes after the last record: corrupt, as
    record by record (the run must stop at the count)."""
    batch = bytearray(raw_batch([(i, 0, None, b"v", ()) for i in range(100)]))
    struct.pack_into(">i", batch, 57, 60)
    with pytest.raises(R.CorruptRecordBatchError, match="bytes after the last record"):
        R.decode_columns(recrc(batch))


def record_by_record(batch):
    """decode_columns with runs switched off: what runs must agree with, corrupt input included."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(record_reader, "read_run", lambda *args: 0)
        try:
            return R.decode_columns(batch)[1]
        except R.CorruptRecordBatchError as exc:
            return type(exc)


@given(runs(), st.data())
@settings(max_examples=400, deadline=None)
def test_corrupt_bytes_inside_a_run_are_found_as_record_by_record(rows, data):
    batch = bytearray(raw_batch(rows))
    for _ in range(data.draw(st.integers(1, 3))):
        batch[data.draw(st.integers(61, len(batch) - 1))] = data.draw(st.integers(0, 255))
    batch = recrc(batch)
    try:
        got = R.decode_columns(batch)[1]
    except R.CorruptRecordBatchError as exc:
        got = type(exc)
    assert got == record_by_record(batch)
