"""The fetcher: positions, the record buffer, and the requests to partition leaders that fill it.

Positions: each assigned partition has the offset of the next record to return, or None until it
is looked up (seek_to_beginning/_end where asked, else auto.offset.reset; a group member starts at
the group's committed offsets). Fetches: one Fetch per leader of the fetchable partitions
(assigned, with a position, not paused, nothing buffered), as Java's Fetcher: a partition with no
known leader waits for a metadata refresh, a leader in reconnect backoff is skipped until its
backoff ends, and a failed Fetch asks for fresh metadata (a disconnect or request timeout already
has: KIP-19), then backs off retry.backoff.ms. A Fetch is a long poll held by the broker for
fetch.max.wait.ms; its request timeout is request.timeout.ms, which the config keeps above it.
Records fetched from a position that changed meanwhile (a seek, a rebalance) are dropped.
ListOffsets (positions, beginning/end offsets, offsets for times) also lives here: it goes to the
same leaders.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import trio

from client.consumer import requests
from client.consumer.deadlines import Retry
from client.consumer.records import ConsumerRecord, TopicPartition
from client.consumer.visible import visible_records
from client.errors import ErrorCode, KafkaError, error_for_code
from client.metadata import STALE_METADATA_ERRORS, ClusterMetadata, MetadataUpdater
from client.network import NetworkClient
from client.protocol import ApiKey

_METADATA = "metadata"   # the key of the refresh in flight in ``_fetching``


class Fetcher:
    def __init__(self, config: Mapping[str, Any], net: NetworkClient, metadata: ClusterMetadata, updater: MetadataUpdater,
                 nursery: trio.Nursery, retry: Retry):
        self.config, self.net, self.metadata, self.updater, self.nursery = config, net, metadata, updater, nursery
        self.retry = retry   # attempt-then-check (client.consumer.deadlines)
        self.request_timeout = config["request.timeout.ms"] / 1000
        self.positions: dict[TopicPartition, int | None] = {}
        self.buffer: list[ConsumerRecord] = []
        self._buffered: dict[tuple[str, int], int] = {}   # records in the buffer per partition
        self.read_committed = config.get("isolation.level") == "read_committed"
        self.skip_after: dict[TopicPartition, tuple[int, int]] = {}   # (last record buffered, offset to go on from)
        self.paused: set[TopicPartition] = set()
        self._reset_to: dict[TopicPartition, str] = {}     # seek_to_beginning/_end, resolved lazily
        self._fetching: set[int | str] = set()             # leaders with a Fetch in flight, and _METADATA
        self._data = trio.Event()
        # group assignments whose committed offsets are applied: a poll waiting for records looks up
        # the positions still missing when this moves, not only when it is called again
        self.settled = 0

    # -- assignment and positions ---------------------------------------------------------------
    def assign(self, tps: Iterable[TopicPartition]) -> None:
        self.positions = {tp: self.positions.get(tp) for tp in tps}
        self.metadata.add_interest(tp.topic for tp in self.positions)

    def assign_from_group(self, tps: list[TopicPartition]) -> None:
        """Partitions the group added: their positions unknown until ``start_from``. The partitions
        kept keep theirs: a KIP-848 reconciliation adds and revokes partitions one step at a time
        (a step that only revokes adds none), and a classic rejoin unassigned the whole assignment
        before it (Java's SubscriptionState.assignFromSubscribed keeps a kept partition's state)."""
        for tp in tps:
            self.positions[tp] = None
        if tps:
            self.metadata.add_interest(tp.topic for tp in tps)

    def start_from(self, committed: Mapping[TopicPartition, int | None]) -> None:
        for tp, offset in committed.items():
            if tp in self.positions and offset is not None:
                self.positions[tp] = offset

    def assignment_settled(self) -> None:
        """A group assignment took what the group had committed; what is still without a position
        waits for auto.offset.reset, which a poll in progress does now (Java's poll loop runs
        updateAssignmentMetadataIfNeeded on every pass)."""
        self.settled += 1
        self._data.set()

    def unassign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.positions.pop(tp, None)
        gone = set(tps)
        self._set_buffer([r for r in self.buffer if TopicPartition(r.topic, r.partition) not in gone])

    def _set_buffer(self, records: list[ConsumerRecord]) -> None:
        self.buffer = records
        self._buffered = {}
        for r in records:
            key = (r.topic, r.partition)
            self._buffered[key] = self._buffered.get(key, 0) + 1

    def current_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: pos for tp in tps if (pos := self.positions.get(tp)) is not None}

    def known_positions(self) -> dict[TopicPartition, int]:
        return {tp: p for tp, p in self.positions.items() if p is not None}

    def seek(self, tp: TopicPartition, offset: int | None) -> None:
        self.positions[tp] = offset
        self._reset_to.pop(tp, None)
        self._set_buffer([r for r in self.buffer if (r.topic, r.partition) != tuple(tp)])

    def seek_to(self, tps: list[TopicPartition] | None, strategy: str) -> None:
        """Lazily (at the next poll or position): ``earliest`` or ``latest``, as Java."""
        for tp in (self.positions if tps is None else tps):
            if tp not in self.positions:
                raise KafkaError(f"seek on {tp}, which is not assigned to this consumer")
            self.seek(tp, None)
            self._reset_to[tp] = strategy

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self.paused |= set(tps)

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self.paused -= set(tps)
        self._data.set()

    async def position(self, tp: TopicPartition, deadline: float) -> int:
        if tp not in self.positions:
            # Java's KafkaConsumer.position: only an assigned partition has one
            raise KafkaError(f"position() of {tp.topic}-{tp.partition}: only partitions assigned to this consumer have a "
                             f"position (assigned: {sorted(self.positions)})")
        if self.positions[tp] is None:
            await self.reset_positions([tp], deadline)
        pos = self.positions.get(tp)
        if pos is None:   # unassigned meanwhile (a rebalance)
            raise KafkaError(f"position() of {tp.topic}-{tp.partition}: the partition was revoked while its position was looked up")
        return pos

    def missing_positions(self) -> list[TopicPartition]:
        return [tp for tp, pos in self.positions.items() if pos is None]

    async def reset_positions(self, tps: list[TopicPartition], deadline: float) -> None:
        """Positions from seek_to_beginning/_end where asked, else auto.offset.reset."""
        by_strategy: dict[str, list[TopicPartition]] = {}
        for tp in tps:
            by_strategy.setdefault(self._reset_to.get(tp, self.config["auto.offset.reset"]), []).append(tp)
        if "none" in by_strategy:
            raise KafkaError(f"no position for {by_strategy['none']} and auto.offset.reset=none")
        for strategy, group in by_strategy.items():
            ts = -2 if strategy == "earliest" else -1
            offsets = await self.retry("position()", deadline, functools.partial(self.list_offsets, group, ts),
                                       lambda: "the partition leaders did not answer ListOffsets")
            for tp, (offset, _) in offsets.items():
                if tp in self.positions and self.positions[tp] is None:
                    self.positions[tp] = offset
                    self._reset_to.pop(tp, None)

    # -- ListOffsets -------------------------------------------------------------------------------
    def _leader(self, tp: TopicPartition) -> int | None:
        info = self.metadata.leader(tp.topic, tp.partition)
        return info.leader if info is not None and info.leader >= 0 else None

    async def _leaders_for(self, tps: list[TopicPartition], request_timeout: float) -> dict[TopicPartition, int]:
        """The current leader of each partition, after a metadata refresh when metadata is stale
        (a disconnect, a stale-metadata error) or lacks one of them."""
        if self.metadata.need_update or any(self._leader(tp) is None for tp in tps):
            self.metadata.add_interest(tp.topic for tp in tps)
            await self.updater.refresh(deadline=trio.current_time() + request_timeout)
        leaders: dict[TopicPartition, int] = {}
        for tp in tps:
            node = self._leader(tp)
            if node is None:
                code = self.metadata.topic_errors.get(tp.topic, ErrorCode.LEADER_NOT_AVAILABLE)
                raise error_for_code(code, f"no leader known for {tp.topic}-{tp.partition} ({ErrorCode(code).name})")
            leaders[tp] = node
        return leaders

    async def list_offsets(self, tps: list[TopicPartition], timestamp: int, request_timeout: float) -> dict:
        """One ListOffsets per leader (Java's OffsetFetcher groups them the same way), all within
        one request timeout; a stale-metadata error asks for a refresh before the next attempt."""
        end = trio.current_time() + request_timeout
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, node in (await self._leaders_for(tps, request_timeout)).items():
            by_node.setdefault(node, []).append(tp)
        out = {}
        for node, group in by_node.items():
            timeout = max(end - trio.current_time(), 0.001)
            body = requests.list_offsets(group, timestamp, requests.isolation(self.config))
            answer = await self.net.request(node, ApiKey.LIST_OFFSETS, body, timeout=timeout)
            for t in answer.topics:
                for part in t.partitions:
                    if part.error_code:
                        if part.error_code in STALE_METADATA_ERRORS:
                            self.updater.request_update()
                        raise error_for_code(part.error_code, f"ListOffsets for {t.name}-{part.partition_index} to "
                                                              f"broker {node}: {ErrorCode(part.error_code).name}")
                    out[TopicPartition(t.name, part.partition_index)] = (part.offset, part.timestamp)
        return out

    # -- the buffer ------------------------------------------------------------------------------
    def ready_records(self) -> list[ConsumerRecord]:
        if not self.paused:
            return self.buffer
        return [r for r in self.buffer if TopicPartition(r.topic, r.partition) not in self.paused]

    def take(self, n: int) -> list[ConsumerRecord]:
        """Up to ``n`` ready records, out of the buffer; positions move past them."""
        if self.paused:
            out = self.ready_records()[:n]
            ids = {id(r) for r in out}
            self.buffer = [r for r in self.buffer if id(r) not in ids]   # (_buffered: below)
            last, taken = _per_partition(out)
        else:   # the common case: a slice, not a filter of the whole buffer
            out = self.buffer[:n]
            del self.buffer[:n]
            last, taken = self._runs_taken(out) or _per_partition(out)
        for key, count in taken.items():
            left = self._buffered[key] - count
            if left > 0:
                self._buffered[key] = left
            else:
                del self._buffered[key]
        for (topic, partition), r in last.items():
            tp = TopicPartition(topic, partition)
            self.positions[tp] = r.offset + 1
            skip = self.skip_after.get(tp)
            if skip is not None and skip[0] == r.offset:
                self.positions[tp] = self.skip_after.pop(tp)[1]
        return out

    def _runs_taken(self, out: list[ConsumerRecord]) -> tuple[dict, dict] | None:
        """What ``_per_partition`` finds, read off the buffer's layout instead of every record: a
        partition is not fetched while it has records buffered, so the buffer holds one run per
        partition, in ``_buffered``'s order. Each run's last record confirms it; None if one does
        not (then the caller counts record by record)."""
        last: dict[tuple[str, int], ConsumerRecord] = {}
        taken: dict[tuple[str, int], int] = {}
        at = 0
        for key, count in self._buffered.items():
            if at == len(out):
                break
            count = min(count, len(out) - at)
            at += count
            r = out[at - 1]
            if (r.topic, r.partition) != key:
                return None
            last[key], taken[key] = r, count
        return (last, taken) if at == len(out) else None

    async def wait_for_records(self, settled: int | None = None) -> bool:
        """Keep fetching until records are ready (the caller bounds the wait): True; False as soon
        as a group assignment settled after the caller saw ``settled`` (positions to look up)."""
        self.start_fetches()
        while not self.ready_records():
            if settled is not None and self.settled != settled:
                return False
            self._data = trio.Event()
            self.start_fetches()
            await self._data.wait()
        return True

    async def wait_idle(self) -> None:
        """Until no fetch is in flight (the broker answers a long poll within fetch.max.wait.ms)."""
        while self._fetching:
            self._data = trio.Event()
            await self._data.wait()

    def close(self) -> None:
        self.positions.clear()  # no new fetches

    # -- fetching --------------------------------------------------------------------------------
    def start_fetches(self) -> None:
        """A Fetch to each leader of fetchable partitions, or a metadata refresh first."""
        by_leader: dict[int, list[TopicPartition]] = {}
        # asked for, or metadata.max.age.ms old: Java's consumer refreshes at that age in every mode, assign()
        # included (NetworkClient.poll -> DefaultMetadataUpdater.maybeUpdate -> Metadata.timeToNextUpdate)
        need_metadata = self.metadata.need_update or self.metadata.expired(trio.current_time())
        buffered = self._buffered
        for tp, pos in self.positions.items():
            if pos is None or tp in self.paused or (tp.topic, tp.partition) in buffered:
                continue
            node = self._leader(tp)
            if node is None:
                need_metadata = True
            else:
                by_leader.setdefault(node, []).append(tp)
        if need_metadata and _METADATA not in self._fetching:
            self._fetching.add(_METADATA)
            self.nursery.start_soon(self._metadata_for_fetch)
        for node, tps in by_leader.items():
            if node in self._fetching:
                continue
            self._fetching.add(node)
            delay = self.net.connection_delay(node)
            if delay > 0 and not self.net.is_ready(node):
                self.nursery.start_soon(self._look_again_after, node, delay)
            else:
                self.nursery.start_soon(self._fetch, node, tps)

    async def _look_again_after(self, node: int, delay: float) -> None:
        try:
            await trio.sleep(delay)
        finally:
            self._fetching.discard(node)
            self._data.set()

    async def _metadata_for_fetch(self) -> None:
        try:
            await self.updater.refresh_for_fetch(self.request_timeout)
        finally:
            self._fetching.discard(_METADATA)
            self._data.set()

    async def _fetch(self, node: int, tps: list[TopicPartition]) -> None:
        # the positions asked from: the answer is kept only where they have not moved since (a seek, a
        # rebalance); a partition revoked between this task's start and its first step is not asked for
        fetched_at = {tp: pos for tp in tps if (pos := self.positions.get(tp)) is not None}
        try:
            if not fetched_at:
                return
            # Fetch v13+ names topics by id; like Java, stay at v12 (we fetch by name)
            answer = await self.net.request(node, ApiKey.FETCH, requests.fetch(self.config, fetched_at), max_version=12)
            if not self._take_answer(answer, fetched_at):
                await trio.sleep(self.config["retry.backoff.ms"] / 1000)  # errors: back off before refetching
        except KafkaError:
            # a disconnect or request timeout has already asked for a metadata refresh (the
            # updater listens to the network client): the next fetch follows the new leader (KIP-19)
            self.updater.request_update()
            await trio.sleep(self.config["retry.backoff.ms"] / 1000)
        finally:
            self._fetching.discard(node)
            self._data.set()

    def _take_answer(self, answer: Any, fetched_at: dict[TopicPartition, int]) -> bool:
        """Buffer the records; False if any partition had an error."""
        clean = answer.error_code == ErrorCode.NONE
        for topic in answer.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                if part.error_code:
                    clean = False
                    if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and self.config["auto.offset.reset"] != "none":
                        if self.positions.get(tp) == fetched_at.get(tp):
                            self.positions[tp] = None    # reset per auto.offset.reset at the next look
                    else:
                        self.updater.request_update()   # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...
                    continue
                start = fetched_at[tp]
                if self.positions.get(tp) != start:
                    continue  # seeked meanwhile: this data is stale
                if (tp.topic, tp.partition) in self._buffered:
                    # another fetch from the same position answered first (one to the old leader was
                    # in flight when the leader moved): these records are buffered already. Java drops
                    # such a completed fetch when it is drained, its offset no longer the position
                    # (FetchCollector, "Discarding stale fetch response")
                    continue
                self._buffer_records(tp, part.records or b"", start, part.aborted_transactions)
        return clean

    def _buffer_records(self, tp: TopicPartition, data: bytes, start: int, aborted: Any = None) -> None:
        topic, partition = tp
        records, next_offset = visible_records(data, topic, partition, start, self.read_committed, aborted)
        self.buffer.extend(records)
        if records:
            key = (topic, partition)
            self._buffered[key] = self._buffered.get(key, 0) + len(records)
        # what the application does not see (markers, aborted batches) is still passed: the next
        # fetch starts after it (Java's nextFetchOffset)
        last = records[-1].offset if records else None
        if last is None:
            self.positions[tp] = max(start, next_offset)
        elif next_offset > last + 1:
            self.skip_after[tp] = (last, next_offset)


def _per_partition(out: list[ConsumerRecord]) -> tuple[dict, dict]:
    """(each partition's last record in ``out``, how many of ``out`` are that partition's)."""
    last: dict[tuple[str, int], ConsumerRecord] = {}
    taken: dict[tuple[str, int], int] = {}
    for r in out:   # a partition's records are in offset order: its last one sets the position
        key = (r.topic, r.partition)
        last[key] = r
        taken[key] = taken.get(key, 0) + 1
    return last, taken
