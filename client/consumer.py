"""The consumer (async face), assign mode: KIP-266 deadlines and the consumer timeout design.

Every blocking call takes ``timeout`` (seconds) or falls back to default.api.timeout.ms. Calls
are attempt-then-check: at least one request goes out even with timeout 0, and the deadline is
looked at only after an attempt fails. Each attempt's request timeout is min(time left in the
call, request.timeout.ms), so a call that gives up leaves nothing in flight past its deadline
(the rule broker-emu adopts from the seed design; Java's consumer keeps request.timeout.ms per
request). ``poll`` never raises a timeout: at its deadline it returns what it has, possibly
nothing, and a fetch still in flight is kept for the next poll.
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, NamedTuple

import trio

from client.backoff import ExponentialBackoff
from client.config import consumer_config
from client.errors import ErrorCode, KafkaError, TimeoutException, error_for_code
from client.exceptions import CommitFailedException, WakeupException
from client.group import COORDINATOR_ERRORS, GroupMembership
from client.metadata import STALE_METADATA_ERRORS, ClusterMetadata, MetadataUpdater
from client.network import Connect, NetworkClient
from client.protocol import ApiKey
from client.protocol.records import decode_batch, iter_batches


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list


class AsyncConsumer:
    def __init__(self, config: dict[str, Any], nursery: trio.Nursery, connect: Connect | None = None):
        self.config = consumer_config(config)
        self.nursery = nursery
        self.net = NetworkClient(self.config, nursery, connect)
        # the producer's metadata layer: leaders, brokers, bootstrap fallback, and a refresh
        # requested by every disconnect (the updater listens) and by stale-metadata errors
        retry_backoff = ExponentialBackoff(self.config["retry.backoff.ms"], self.config["retry.backoff.max.ms"], self.net.rng)
        self.metadata = ClusterMetadata(self.config["metadata.max.age.ms"] / 1000, retry_backoff)
        self.updater = MetadataUpdater(self.net, self.metadata, self.config["allow.auto.create.topics"])
        self.positions: dict[TopicPartition, int | None] = {}
        self.buffer: list[ConsumerRecord] = []
        self._data = trio.Event()
        self._fetching: set[int | str] = set()   # leaders with a Fetch in flight, and _METADATA
        self.coordinator: int | None = None
        self.last_coordinator: int | None = None   # for error messages after a failed attempt
        self.request_timeout = self.config["request.timeout.ms"] / 1000
        self.membership: GroupMembership | None = None
        self.paused: set[TopicPartition] = set()
        self._reset_to: dict[TopicPartition, str] = {}     # seek_to_beginning/_end, resolved lazily
        self._wakeup = False
        self._wakeup_event = trio.Event()
        self.last_poll = trio.current_time()
        self._next_auto_commit = trio.current_time() + self.config["auto.commit.interval.ms"] / 1000

    # -- deadlines -----------------------------------------------------------------------------
    def _deadline(self, timeout: float | None) -> float:
        t = self.config["default.api.timeout.ms"] / 1000 if timeout is None else max(timeout, 0.0)
        return trio.current_time() + t

    async def _attempt_then_check(self, call: str, deadline: float, attempt: Callable[[float], Awaitable[Any]],
                                  waiting_for: Callable[[], str]) -> Any:
        """Run ``attempt(request_timeout)`` until it succeeds; retriable failures are retried
        with backoff while time is left; the deadline is checked only after a failure."""
        started = trio.current_time()
        backoff = self.config["retry.backoff.ms"] / 1000
        while True:
            left = deadline - trio.current_time()
            request_timeout = min(max(left, 0.001), self.request_timeout)  # min(remaining, request.timeout.ms)
            try:
                return await attempt(request_timeout)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                last = exc
            if trio.current_time() >= deadline:
                elapsed = (trio.current_time() - started) * 1000
                raise TimeoutException(f"{call} gave up after {elapsed:.0f} ms: {waiting_for()}; last attempt: {last}")
            await trio.sleep(min(backoff, max(deadline - trio.current_time(), 0)))
            backoff = min(backoff * 2, self.config["retry.backoff.max.ms"] / 1000)

    # -- metadata and coordinator --------------------------------------------------------------
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

    async def _find_coordinator(self, timeout: float) -> int:
        group = self.config["group.id"]
        answer = await self.net.request(self.net.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                        {"key": group, "key_type": 0, "coordinator_keys": [group]}, timeout=timeout)
        entry = answer.coordinators[0] if answer.get("coordinators") else answer
        if entry.error_code:
            raise error_for_code(entry.error_code)
        self.net.nodes[entry.node_id] = (entry.host, entry.port)
        self.coordinator = entry.node_id
        return entry.node_id

    def _group(self) -> str:
        if not self.config["group.id"]:
            raise KafkaError("this call needs group.id")
        return self.config["group.id"]

    # -- assignment and positions --------------------------------------------------------------
    def assign(self, partitions: list[TopicPartition]) -> None:
        if self.membership is not None:
            raise KafkaError("assign() and subscribe() exclude each other: unsubscribe() first")
        self.positions = {TopicPartition(*tp): self.positions.get(TopicPartition(*tp)) for tp in partitions}
        self.metadata.add_interest(tp.topic for tp in self.positions)

    def subscribe(self, topics: list[str] | None = None, pattern: str | re.Pattern | None = None,
                  on_assign: Callable[[list[TopicPartition]], Any] | None = None,
                  on_revoke: Callable[[list[TopicPartition]], Any] | None = None) -> None:
        """Join the group (group.id) for these topics, or every topic matching ``pattern``; the
        partitions come from the group's assignor. Joining happens in the background; ``poll``
        waits for it within its own timeout."""
        self._group()
        if (topics is None) == (pattern is None):
            raise KafkaError("subscribe() takes topics or a pattern")
        if self.positions and self.membership is None:
            raise KafkaError("assign() and subscribe() exclude each other: assign([]) first")
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.last_poll = trio.current_time()
        if self.membership is not None:
            m = self.membership
            m.topics, m.pattern = (list(topics) if topics is not None else None), compiled
            m.on_assign, m.on_revoke = on_assign, on_revoke
            m.rejoin_soon()
            return
        self.membership = GroupMembership(self, list(topics) if topics is not None else None, compiled, on_assign, on_revoke)
        self.nursery.start_soon(self.membership.run)

    async def unsubscribe(self) -> None:
        if self.membership is not None:
            m, self.membership = self.membership, None
            m.closed = True
            await m.leave("the consumer unsubscribed")
            m._wake.set()

    def assignment(self) -> list[TopicPartition]:
        if self.membership is not None:
            return list(self.membership.assignment)
        return sorted(self.positions)

    def current_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: pos for tp in tps if (pos := self.positions.get(tp)) is not None}

    def unassign_from_group(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.positions.pop(tp, None)
        gone = set(tps)
        self.buffer = [r for r in self.buffer if TopicPartition(r.topic, r.partition) not in gone]

    async def assign_from_group(self, tps: list[TopicPartition]) -> None:
        """Positions of newly assigned partitions start at the group's committed offsets
        (auto.offset.reset where none is committed)."""
        self.positions = {tp: None for tp in tps}
        if not tps:
            return
        self.metadata.add_interest(tp.topic for tp in tps)
        try:
            committed = await self.committed(tps, self.request_timeout)
        except KafkaError:
            return  # poll resets what is left without a position
        for tp, offset in committed.items():
            if tp in self.positions and offset is not None:
                self.positions[tp] = offset

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[TopicPartition(*tp)] = offset
        self._reset_to.pop(TopicPartition(*tp), None)
        self.buffer = [r for r in self.buffer if (r.topic, r.partition) != tuple(tp)]

    async def _list_offsets(self, tps: list[TopicPartition], timestamp: int, request_timeout: float) -> dict:
        """One ListOffsets per leader (Java's OffsetFetcher groups them the same way), all within
        one request timeout; a stale-metadata error asks for a refresh before the next attempt."""
        end = trio.current_time() + request_timeout
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, node in (await self._leaders_for(tps, request_timeout)).items():
            by_node.setdefault(node, []).append(tp)
        out = {}
        for node, group in by_node.items():
            body = {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": tp.partition, "current_leader_epoch": -1,
                                                "timestamp": timestamp} for tp in group if tp.topic == topic]}
                for topic in sorted({tp.topic for tp in group})]}
            timeout = max(end - trio.current_time(), 0.001)
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

    async def beginning_offsets(self, tps, timeout: float | None = None) -> dict:
        return await self._offsets_call("beginning_offsets()", tps, -2, timeout)

    async def end_offsets(self, tps, timeout: float | None = None) -> dict:
        return await self._offsets_call("end_offsets()", tps, -1, timeout)

    async def offsets_for_times(self, tps_to_ts: dict, timeout: float | None = None) -> dict:
        out = {}
        deadline = self._deadline(timeout)
        for tp, ts in tps_to_ts.items():
            got = await self._attempt_then_check("offsets_for_times()", deadline,
                                                 functools.partial(self._list_offsets, [TopicPartition(*tp)], ts),
                                                 lambda: "the partition leader did not answer ListOffsets")
            out.update(got)
        return out

    async def _offsets_call(self, call, tps, ts, timeout) -> dict:
        tps = [TopicPartition(*tp) for tp in tps]
        got = await self._attempt_then_check(call, self._deadline(timeout), lambda rt: self._list_offsets(tps, ts, rt),
                                             lambda: "the partition leaders did not answer ListOffsets")
        return {tp: offset for tp, (offset, _) in got.items()}

    async def position(self, tp: TopicPartition, timeout: float | None = None) -> int:
        tp = TopicPartition(*tp)
        if tp not in self.positions:
            # Java's KafkaConsumer.position: only an assigned partition has one
            raise KafkaError(f"position() of {tp.topic}-{tp.partition}: only partitions assigned to this consumer have a "
                             f"position (assigned: {sorted(self.positions)})")
        if self.positions[tp] is None:
            await self._reset_positions([tp], self._deadline(timeout))
        pos = self.positions.get(tp)
        if pos is None:   # unassigned meanwhile (a rebalance)
            raise KafkaError(f"position() of {tp.topic}-{tp.partition}: the partition was revoked while its position was looked up")
        return pos

    async def _reset_positions(self, tps: list[TopicPartition], deadline: float) -> None:
        """Positions from seek_to_beginning/_end where asked, else auto.offset.reset."""
        by_strategy: dict[str, list[TopicPartition]] = {}
        for tp in tps:
            by_strategy.setdefault(self._reset_to.get(tp, self.config["auto.offset.reset"]), []).append(tp)
        if "none" in by_strategy:
            raise KafkaError(f"no position for {by_strategy['none']} and auto.offset.reset=none")
        for strategy, group in by_strategy.items():
            ts = -2 if strategy == "earliest" else -1
            offsets = await self._attempt_then_check("position()", deadline, functools.partial(self._list_offsets, group, ts),
                                                     lambda: "the partition leaders did not answer ListOffsets")
            for tp, (offset, _) in offsets.items():
                if tp in self.positions and self.positions[tp] is None:
                    self.positions[tp] = offset
                    self._reset_to.pop(tp, None)

    def seek_to_beginning(self, tps: list[TopicPartition] | None = None) -> None:
        """Lazily (at the next poll or position): the log start offset, as Java."""
        self._seek_to(tps, "earliest")

    def seek_to_end(self, tps: list[TopicPartition] | None = None) -> None:
        self._seek_to(tps, "latest")

    def _seek_to(self, tps: list[TopicPartition] | None, strategy: str) -> None:
        for tp in (self.positions if tps is None else [TopicPartition(*t) for t in tps]):
            if tp not in self.positions:
                raise KafkaError(f"seek on {tp}, which is not assigned to this consumer")
            self.seek(tp, None)  # type: ignore[arg-type]
            self._reset_to[tp] = strategy

    def pause(self, tps: list[TopicPartition]) -> None:
        """No fetching, and poll returns nothing, for these partitions until resume()."""
        self.paused |= {TopicPartition(*tp) for tp in tps}

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused -= {TopicPartition(*tp) for tp in tps}
        self._data.set()

    async def list_topics(self, timeout: float | None = None) -> dict[str, list[int]]:
        """Every topic with its partition ids (Metadata for all topics, attempt-then-check)."""
        async def attempt(rt: float) -> dict[str, list[int]]:
            md = await self.updater.refresh(deadline=trio.current_time() + rt, all_topics=True)
            return {t.name: sorted(p.partition_index for p in t.partitions) for t in md.topics if t.error_code == 0}

        return await self._attempt_then_check("list_topics()", self._deadline(timeout), attempt,
                                              lambda: "no broker answered Metadata")

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[int]:
        """The topic's partition ids ([] if it does not exist), attempt-then-check."""
        async def attempt(rt: float) -> list[int]:
            await self.updater.refresh([topic], deadline=trio.current_time() + rt)
            return [p.partition for p in self.metadata.partitions(topic) or ()]

        return await self._attempt_then_check("partitions_for()", self._deadline(timeout), attempt,
                                              lambda: "no broker answered Metadata")

    async def client_instance_id(self, timeout: float | None = None):
        """The id the cluster gives this client for telemetry (KIP-714, GetTelemetrySubscriptions)."""
        async def attempt(rt: float):
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
                                            {"client_instance_id": __import__("uuid").UUID(int=0)}, timeout=rt)
            if answer.error_code:
                raise error_for_code(answer.error_code)
            return answer.client_instance_id

        return await self._attempt_then_check("client_instance_id()", self._deadline(timeout), attempt,
                                              lambda: "no broker answered GetTelemetrySubscriptions")

    def wakeup(self) -> None:
        """Make the current (or next) poll raise WakeupException at once, as Java."""
        self._wakeup = True
        self._wakeup_event.set()

    # -- poll ----------------------------------------------------------------------------------
    async def poll(self, timeout: float = 0.0) -> list[ConsumerRecord]:
        """Return buffered records (up to max.poll.records); wait for data at most ``timeout``
        seconds; never raises a timeout. A fetch in flight at the deadline stays in flight."""
        deadline = trio.current_time() + max(timeout, 0.0)
        self.last_poll = trio.current_time()
        if self.membership is not None:
            self.membership.poll_called()
            self._maybe_auto_commit()
        self._check_wakeup()
        with trio.move_on_at(deadline):
            async with trio.open_nursery() as waiting:
                waiting.start_soon(self._cancel_on_wakeup, waiting.cancel_scope)
                if self.membership is not None and not self.membership.active.is_set():
                    await self.membership.active.wait()
                unknown = [tp for tp, pos in self.positions.items() if pos is None]
                if unknown:
                    with contextlib.suppress(TimeoutException):
                        await self._reset_positions(unknown, deadline)
                self._start_fetches()
                while not self._ready_records():
                    self._data = trio.Event()
                    self._start_fetches()
                    await self._data.wait()
                waiting.cancel_scope.cancel()
        self._check_wakeup()
        n = self.config["max.poll.records"]
        ready = self._ready_records()
        out = ready[:n]
        taken = {id(r) for r in out}
        self.buffer = [r for r in self.buffer if id(r) not in taken]
        for r in out:
            self.positions[TopicPartition(r.topic, r.partition)] = r.offset + 1
        return out

    def _ready_records(self) -> list[ConsumerRecord]:
        if not self.paused:
            return self.buffer
        return [r for r in self.buffer if TopicPartition(r.topic, r.partition) not in self.paused]

    async def _cancel_on_wakeup(self, scope: trio.CancelScope) -> None:
        await self._wakeup_event.wait()
        scope.cancel()

    def _check_wakeup(self) -> None:
        if self._wakeup:
            self._wakeup = False
            self._wakeup_event = trio.Event()
            raise WakeupException("poll() was interrupted by wakeup()")

    _METADATA = "metadata"   # the key of the refresh in flight in ``_fetching``

    def _start_fetches(self) -> None:
        """A Fetch to each leader of fetchable partitions. As Java's Fetcher: a partition with no
        known leader waits for a metadata refresh, and a leader in reconnect backoff is skipped
        until its backoff ends (then looked at again)."""
        by_leader: dict[int, list[TopicPartition]] = {}
        need_metadata = self.metadata.need_update
        buffered = {(r.topic, r.partition) for r in self.buffer}
        for tp, pos in self.positions.items():
            if pos is None or tp in self.paused or (tp.topic, tp.partition) in buffered:
                continue
            node = self._leader(tp)
            if node is None:
                need_metadata = True
            else:
                by_leader.setdefault(node, []).append(tp)
        if need_metadata and self._METADATA not in self._fetching:
            self._fetching.add(self._METADATA)
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
        """Refresh the assigned topics' metadata, no sooner than the refresh backoff allows."""
        try:
            await trio.sleep_until(self.metadata.allowed_at)
            await self.updater.refresh(deadline=trio.current_time() + self.request_timeout)
        except KafkaError:
            pass   # the updater applied the refresh backoff; the next look tries again
        finally:
            self._fetching.discard(self._METADATA)
            self._data.set()

    async def _fetch(self, node: int, tps: list[TopicPartition]) -> None:
        """One Fetch (a long poll on the broker for fetch.max.wait.ms; its request timeout is
        request.timeout.ms, which the config keeps above fetch.max.wait.ms)."""
        fetched_at = {(tp.topic, tp.partition): self.positions[tp] for tp in tps}  # a rebalance may drop them meanwhile
        body = {"replica_id": -1, "max_wait_ms": self.config["fetch.max.wait.ms"], "min_bytes": self.config["fetch.min.bytes"],
                "max_bytes": self.config["fetch.max.bytes"], "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": tp.topic, "partitions": [{"partition": tp.partition, "fetch_offset": self.positions[tp],
                            "partition_max_bytes": self.config["max.partition.fetch.bytes"], "current_leader_epoch": -1}]}
                           for tp in tps]}
        try:
            # Fetch v13+ names topics by id; like Java, stay at v12 (we fetch by name)
            answer = await self.net.request(node, ApiKey.FETCH, body, max_version=12)
            if not self._take(answer, fetched_at):
                await trio.sleep(self.config["retry.backoff.ms"] / 1000)  # errors: back off before refetching
        except KafkaError:
            # a disconnect or request timeout has already asked for a metadata refresh (the
            # updater listens to the network client): the next fetch follows the new leader (KIP-19)
            self.updater.request_update()
            await trio.sleep(self.config["retry.backoff.ms"] / 1000)
        finally:
            self._fetching.discard(node)
            self._data.set()

    def _take(self, answer: Any, fetched_at: dict) -> bool:
        """Buffer the records; False if any partition had an error."""
        clean = answer.error_code == 0
        for topic in answer.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                if part.error_code:
                    clean = False
                    if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and self.config["auto.offset.reset"] != "none":
                        if self.positions.get(tp) == fetched_at.get((tp.topic, tp.partition)):
                            self.positions[tp] = None    # reset per auto.offset.reset at the next look
                    else:
                        self.updater.request_update()   # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...
                    continue
                start = fetched_at[(tp.topic, tp.partition)]
                if self.positions.get(tp) != start:
                    continue  # seeked meanwhile: this data is stale
                data = part.records or b""
                for pos, _ in iter_batches(data):
                    _, records = decode_batch(data, pos)
                    for r in records:
                        if r.offset >= start:
                            self.buffer.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp, r.key, r.value, list(r.headers)))
        return clean

    # -- offsets in the group --------------------------------------------------------------------
    async def committed(self, tps, timeout: float | None = None) -> dict:
        group = self._group()
        tps = [TopicPartition(*tp) for tp in tps]

        async def attempt(rt: float) -> dict:
            node = self.coordinator if self.coordinator is not None else await self._find_coordinator(rt)
            self.last_coordinator = node
            body = {"group_id": group, "topics": [{"name": t, "partition_indexes": [tp.partition for tp in tps if tp.topic == t]}
                                                  for t in sorted({tp.topic for tp in tps})],
                    "groups": [{"group_id": group, "topics": [{"name": t, "partition_indexes": [tp.partition for tp in tps if tp.topic == t]}
                                                              for t in sorted({tp.topic for tp in tps})]}]}
            try:
                answer = await self.net.request(node, ApiKey.OFFSET_FETCH, body, timeout=rt)
            except KafkaError:
                self.coordinator = None
                raise
            topics = answer.groups[0].topics if answer.get("groups") else answer.topics
            error = (answer.groups[0].error_code if answer.get("groups") else answer.get("error_code", 0))
            if error in COORDINATOR_ERRORS:
                self.coordinator = None
            if error:
                raise error_for_code(error)
            return {TopicPartition(t.name, p.partition_index): (p.committed_offset if p.committed_offset >= 0 else None)
                    for t in topics for p in t.partitions}

        return await self._attempt_then_check("committed()", self._deadline(timeout), attempt, lambda: (
            f"the group coordinator for '{group}' ({'broker %d' % self.last_coordinator if self.last_coordinator is not None else 'not found'}) "
            "did not answer"))

    async def commit_sync(self, offsets: dict | None = None, timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the current positions). In a group, as this member of its
        generation: a fenced commit raises CommitFailedException (not retried)."""
        group = self._group()
        offsets = {TopicPartition(*tp): o for tp, o in (offsets or {tp: p for tp, p in self.positions.items() if p is not None}).items()}
        if not offsets:
            return
        membership = self.membership

        async def attempt(rt: float) -> None:
            if membership is not None:
                if membership.generation < 0:
                    raise CommitFailedException(
                        f"commit of {len(offsets)} offset(s) for group '{group}': this member is not in an active "
                        f"generation of the group (joining, rebalancing, or expelled); its partitions may belong to "
                        f"another member; rejoin by polling, then commit again")
                await membership.commit(offsets, rt)
                return
            node = self.coordinator if self.coordinator is not None else await self._find_coordinator(rt)
            body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
                {"name": t, "partitions": [{"partition_index": tp.partition, "committed_offset": o, "committed_leader_epoch": -1,
                                            "committed_metadata": ""} for tp, o in offsets.items() if tp.topic == t]}
                for t in sorted({tp.topic for tp in offsets})]}
            try:
                answer = await self.net.request(node, ApiKey.OFFSET_COMMIT, body, timeout=rt)
            except KafkaError:
                self.coordinator = None
                raise
            for t in answer.topics:
                for p in t.partitions:
                    if p.error_code in COORDINATOR_ERRORS:
                        self.coordinator = None
                    if p.error_code:
                        raise error_for_code(p.error_code)

        await self._attempt_then_check("commit_sync()", self._deadline(timeout), attempt,
                                       lambda: f"the group coordinator for '{group}' did not answer OffsetCommit")

    def commit_async(self, offsets: dict | None = None,
                     callback: Callable[[KafkaError | None, dict], Any] | None = None) -> None:
        """Commit in the background; ``callback(error or None, offsets)`` runs when it ends."""
        chosen = dict(offsets) if offsets else {tp: p for tp, p in self.positions.items() if p is not None}

        async def run() -> None:
            error = None
            try:
                await self.commit_sync(chosen, self.request_timeout)
            except KafkaError as exc:
                error = exc
            if callback is not None:
                callback(error, chosen)

        self.nursery.start_soon(run)

    def _maybe_auto_commit(self) -> None:
        now = trio.current_time()
        if self.config["enable.auto.commit"] and now >= self._next_auto_commit and self.membership is not None \
                and self.membership.active.is_set():
            self._next_auto_commit = now + self.config["auto.commit.interval.ms"] / 1000
            self.commit_async()

    async def aclose(self, timeout: float | None = None) -> None:
        """Close cleanly: let fetches in flight finish (the broker answers a long poll within
        fetch.max.wait.ms) so no request is abandoned, but never wait past ``timeout``
        (default 30 s, Kafka's close timeout); then drop the connections. Never raises a timeout."""
        with trio.move_on_after(30.0 if timeout is None else max(timeout, 0.0)):
            if self.membership is not None:
                m = self.membership
                if self.config["enable.auto.commit"] and m.active.is_set():
                    with contextlib.suppress(KafkaError):
                        await self.commit_sync(None, self.request_timeout)
                m.closed = True
                await m.leave()
                m._wake.set()
            while self._fetching:
                self._data = trio.Event()
                await self._data.wait()
        self.close()

    def close(self) -> None:
        self.positions.clear()  # no new fetches
        self.net.close()


@contextlib.asynccontextmanager
async def open_consumer(config: dict[str, Any], connect: Connect | None = None) -> AsyncIterator[AsyncConsumer]:
    async with trio.open_nursery() as nursery:
        consumer = AsyncConsumer(config, nursery, connect)
        try:
            yield consumer
            await consumer.aclose()
        finally:
            consumer.close()
            nursery.cancel_scope.cancel()
