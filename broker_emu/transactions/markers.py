"""Commit and abort markers: one control batch per partition of a transaction, appended by the
coordinator after EndTxn or a timeout (Kafka: ``TransactionMarkerChannelManager`` sends
WriteTxnMarkers to each partition leader, which appends ``EndTransactionMarker`` records).

A marker is a control batch (attributes transactional + control) of one record whose key is
(version 0, type: 0 abort, 1 commit) and whose value is (version 0, coordinator epoch), both
big-endian, as ``ControlRecordType`` and ``EndTransactionMarker`` lay them out.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from broker_emu.transactions.cluster_view import MarkerLog
from client.protocol.records import Record, decode_batch, encode_batch, parse_batch_header

if TYPE_CHECKING:
    from broker_emu.partition import Partition

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def marker_batch(producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int) -> bytes:
    record = Record(_VALUE.pack(0, coordinator_epoch), key=_KEY.pack(0, COMMIT if commit else ABORT), timestamp=timestamp_ms)
    return encode_batch([record], base_timestamp=timestamp_ms, producer_id=producer_id, producer_epoch=epoch,
                        base_sequence=-1, transactional=True, control=True)


def write_marker(cluster: MarkerLog, p: "Partition", producer_id: int, epoch: int, commit: bool,
                 coordinator_epoch: int = 0) -> int:
    """Append the marker to ``p``'s log (and to its followers, as any append); its offset."""
    batch = marker_batch(producer_id, epoch, commit, coordinator_epoch, cluster.wall_ms())
    header = parse_batch_header(batch)
    previous = p.log_end_offset
    base, _ = p.log.append(batch, header, p.leader_epoch)
    p.txns.marker_appended(producer_id, base, commit)
    cluster.after_append(p, previous)
    return base


def lost_marker(data: bytes) -> tuple[int, int, bool] | None:
    """(producer id, epoch, commit) of a marker batch, None for any other batch."""
    header = parse_batch_header(data)
    if not header.is_control:
        return None
    _, records = decode_batch(data, check_crc=False)
    kind = _KEY.unpack(bytes(records[0].key))[1] if records and records[0].key is not None else ABORT
    return header.producer_id, header.producer_epoch, kind == COMMIT
