"""ShareFetch and ShareAcknowledge (Java's ``ShareConsumeRequestManager``): the records buffer,
a share session with each leader, and the acknowledgements on their way.

A ShareFetch goes to each leader of the assigned partitions when the buffer is empty, from a
poll until a fetch acquires records (in the background, after the poll if need be, as Java's
``fetchMoreRecords``): a long poll the broker holds up to fetch.max.wait.ms, carrying the acknowledgements waiting for that
broker; its answer brings records, each acquired for this member with a lock the broker times
(``acquisition_lock_timeout_ms``) and a delivery count. One request at a time runs in a session
(the epochs must follow each other, and a broker answers a connection's requests in order), so a
ShareAcknowledge waits for the ShareFetch in flight to the same broker — as Java skips an
acknowledgement "because previous request to {} has not been processed".

Acknowledgements go to the broker the records came from: with the next ShareFetch there, or in
a ShareAcknowledge of their own when records are still buffered (``flush``), when the application
commits (``acknowledge``), or when it closes (``close_sessions``, epoch -1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import trio

from client.consumer.records import TopicPartition
from client.consumer.visible import visible_records
from client.errors import ErrorCode, KafkaError, TimeoutException, error_for_code
from client.metadata import ClusterMetadata, MetadataUpdater
from client.network import NetworkClient
from client.protocol import ApiKey
from client.share.acknowledgements import GAP, AcknowledgeType, Acks, ShareRecord, describe, merge
from client.share.sessions import ShareSession

_METADATA = -(2**40)   # the key of the metadata refresh in flight in ``_fetching``
Results = dict[TopicPartition, KafkaError | None]


class ShareFetcher:
    def __init__(self, config: Mapping[str, Any], net: NetworkClient, metadata: ClusterMetadata,
                 updater: MetadataUpdater, nursery: trio.Nursery, member_id: str):
        self.config, self.net, self.metadata, self.updater, self.nursery = config, net, metadata, updater, nursery
        self.group: str = config["group.id"]
        self.member_id = member_id
        self.request_timeout = config["request.timeout.ms"] / 1000
        self.backoff = config["retry.backoff.ms"] / 1000
        self.assigned: list[TopicPartition] = []
        self.buffer: list[ShareRecord] = []
        self.sessions: dict[int, ShareSession] = {}
        self._locks: dict[int, trio.Lock] = {}
        self.pending: dict[int, Acks] = {}             # broker -> acknowledgements for the next request there
        self.node_of: dict[TopicPartition, int] = {}   # the broker each partition's records came from
        self.lock_timeout_ms: int | None = None        # the broker's, from its latest answer
        # the outcomes of acknowledgements sent in the background (with a fetch, a flush), newest last
        self.results: deque[tuple[Acks, KafkaError | None]] = deque(maxlen=1000)
        self.on_completed: Callable[[Acks, KafkaError | None], None] | None = None   # every outcome, as it comes
        self.carrying: dict[int, Acks] = {}            # broker -> what its ShareFetch in flight carries
        self._fetching: set[int] = set()
        self._flushing: set[int] = set()
        self._data = trio.Event()          # something changed: the fetching task looks again
        self._ready = trio.Event()         # records are buffered
        self.fetching_more = False         # Java's fetchMoreRecords: the fetching task runs ...
        self._acquired = False             # ... until a fetch acquires records
        self.closed = False

    # -- assignment ------------------------------------------------------------------------------
    def assign(self, tps: list[TopicPartition]) -> None:
        """A new assignment: records buffered for partitions no longer assigned go back to the group."""
        self.assigned = sorted(tps)
        self.metadata.add_interest({tp.topic for tp in tps})
        gone = [r for r in self.buffer if TopicPartition(r.topic, r.partition) not in self.assigned]
        if gone:
            self.buffer = [r for r in self.buffer if TopicPartition(r.topic, r.partition) in self.assigned]
            if not self.buffer:
                self._ready = trio.Event()
            self.queue({TopicPartition(r.topic, r.partition): {r.offset: int(AcknowledgeType.RELEASE)} for r in gone})
        self._data.set()

    def _topic_ids(self) -> dict[str, Any]:
        return {name: tid for tid, name in self.metadata.topic_names.items()}

    def _leader(self, tp: TopicPartition) -> int | None:
        info = self.metadata.leader(tp.topic, tp.partition)
        return info.leader if info is not None and info.leader >= 0 else None

    def _lock(self, node: int) -> trio.Lock:
        return self._locks.setdefault(node, trio.Lock())

    def session(self, node: int) -> ShareSession:
        return self.sessions.setdefault(node, ShareSession(node))

    # -- the buffer ------------------------------------------------------------------------------
    def take(self, n: int) -> list[ShareRecord]:
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        if not self.buffer:
            self._ready = trio.Event()
        return out

    async def wait_for_records(self) -> None:
        """Until records are buffered (the caller bounds the wait). Fetching goes on in the
        background until a fetch acquires records, even after the caller gave up (Java's
        ShareConsumeRequestManager keeps ``fetchMoreRecords`` from a poll until acquired records
        arrive): a poll that returned empty-handed leaves a member still asking."""
        if not self.buffer and not self.fetching_more and not self.closed:
            self.fetching_more = True
            self.nursery.start_soon(self._fetch_until_records)
        await self._ready.wait()

    async def _fetch_until_records(self) -> None:
        self._acquired = False
        try:
            while not self._acquired and not self.closed:
                self._data = trio.Event()
                self.start_fetches()
                await self._data.wait()
        finally:
            self.fetching_more = False

    # -- fetching --------------------------------------------------------------------------------
    def start_fetches(self) -> None:
        """A ShareFetch to each leader of the assigned partitions, when nothing is buffered."""
        if self.closed or self.buffer:
            return
        ids = self._topic_ids()
        by_node: dict[int, dict[TopicPartition, Any]] = {}
        need_metadata = self.metadata.need_update
        for tp in self.assigned:
            node = self._leader(tp)
            if node is None or tp.topic not in ids:
                need_metadata = True
            else:
                by_node.setdefault(node, {})[tp] = ids[tp.topic]
        if need_metadata and _METADATA not in self._fetching:
            self._fetching.add(_METADATA)
            self.nursery.start_soon(self._metadata_for_fetch)
        for node, wanted in by_node.items():
            if node not in self._fetching:
                self._fetching.add(node)
                self.nursery.start_soon(self._fetch, node, wanted)

    async def _metadata_for_fetch(self) -> None:
        try:
            await self.updater.refresh_for_fetch(self.request_timeout)
        finally:
            self._fetching.discard(_METADATA)
            self._data.set()

    async def _fetch(self, node: int, wanted: dict[TopicPartition, Any]) -> None:
        try:
            async with self._lock(node):
                failed = not self.closed and not await self._fetch_once(node, wanted)
            if failed:
                await trio.sleep(self.backoff)   # outside the session: an acknowledgement need not wait for it
        finally:
            self.carrying.pop(node, None)
            self._fetching.discard(node)
            self._data.set()

    async def _fetch_once(self, node: int, wanted: dict[TopicPartition, Any]) -> bool:
        """One ShareFetch in the session with ``node``; False if it failed (the caller backs off)."""
        session = self.session(node)
        acks = self.pending.pop(node, {})
        body, carried = session.fetch_body(self.group, self.member_id, wanted, acks, self.config, self._topic_ids())
        unsent = {tp: offsets for tp, offsets in acks.items() if tp not in carried}
        if unsent:
            self._completed(unsent, self._no_session(node, unsent))
        self.carrying[node] = carried
        try:
            answer = await self.net.request(node, ApiKey.SHARE_FETCH, body)
        except KafkaError as exc:
            session.restart()
            if carried:
                self._completed(carried, exc)
            self.updater.request_update()
            return False
        finally:
            self.carrying.pop(node, None)
        session.answered(answer.error_code)
        if answer.error_code:
            error = error_for_code(answer.error_code, f"ShareFetch to broker {node}: {ErrorCode(answer.error_code).name}")
            if carried:
                self._completed(carried, error)
            return False
        self._take_answer(node, answer, carried)
        return True

    def _completed(self, acks: Acks, error: KafkaError | None) -> None:
        self.results.append((acks, error))
        if self.on_completed is not None:
            self.on_completed(acks, error)

    def _no_session(self, node: int, acks: Acks) -> KafkaError:
        return KafkaError(f"no share session with broker {node} (its last request failed, so the next one opens a "
                          f"new session, which cannot carry acknowledgements): not sent: {describe(acks)}; the broker "
                          f"hands these records out again when their locks run out")

    def _take_answer(self, node: int, answer: Any, carried: Acks) -> None:
        self.lock_timeout_ms = answer.acquisition_lock_timeout_ms
        names = self.metadata.topic_names
        for topic in answer.responses:
            name = names.get(topic.topic_id)
            for part in topic.partitions:
                if name is None:
                    continue
                tp = TopicPartition(name, part.partition_index)
                if tp in carried:
                    code = part.acknowledge_error_code
                    self._completed({tp: carried[tp]}, error_for_code(code, part.acknowledge_error_message)
                                    if code else None)
                if part.error_code:
                    self.updater.request_update()   # NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_ID, ...
                    continue
                self._buffer(node, tp, part)

    def _buffer(self, node: int, tp: TopicPartition, part: Any) -> None:
        counts = {o: a.delivery_count for a in part.acquired_records for o in range(a.first_offset, a.last_offset + 1)}
        if not counts:
            return
        records, _ = visible_records(part.records or b"", tp.topic, tp.partition, min(counts), False, None)
        got = [ShareRecord(*r, counts[r.offset], self.lock_timeout_ms) for r in records if r.offset in counts]
        self.node_of[tp] = node
        seen = {r.offset for r in got}
        gaps = {o: GAP for o in counts if o not in seen}   # acquired, nothing for the application
        if tp not in self.assigned:   # unassigned while the fetch was out: give them back
            gaps.update({r.offset: int(AcknowledgeType.RELEASE) for r in got})
            got = []
        if gaps:
            merge(self.pending.setdefault(node, {}), {tp: gaps})
        self.buffer.extend(got)
        if got:
            self._acquired = True
        if self.buffer:
            self._ready.set()

    # -- acknowledging ---------------------------------------------------------------------------
    def by_node(self, acks: Acks) -> dict[int, Acks]:
        out: dict[int, Acks] = {}
        for tp, offsets in acks.items():
            node = self.node_of.get(tp, self._leader(tp))
            if node is not None:
                merge(out.setdefault(node, {}), {tp: offsets})
        return out

    def queue(self, acks: Acks) -> None:
        """Acknowledgements for the next request to each broker: a ShareFetch if one starts now,
        else a ShareAcknowledge of their own (``flush``)."""
        for node, node_acks in self.by_node(acks).items():
            merge(self.pending.setdefault(node, {}), node_acks)
        already = set(self._fetching)
        self.start_fetches()
        for node in [n for n, a in self.pending.items() if a]:
            if (node in already or node not in self._fetching) and node not in self._flushing:
                self._flushing.add(node)
                self.nursery.start_soon(self._flush, node)

    async def _flush(self, node: int) -> None:
        try:
            async with self._lock(node):
                acks = self.pending.pop(node, {})
                if acks and not self.closed:
                    results, _ = await self._acknowledge(node, acks, self.request_timeout)
                    for tp, error in results.items():
                        self._completed({tp: acks[tp]}, error)
        finally:
            self._flushing.discard(node)

    def take_pending(self) -> Acks:
        out: Acks = {}
        for acks in self.pending.values():
            merge(out, acks)
        self.pending.clear()
        return out

    async def acknowledge(self, acks: Acks, deadline: float, call: str, *, renew: bool = False,
                          final: bool = False) -> Results:
        """Send ``acks`` (``final``: closing each session, even with none) and wait for the
        answers until ``deadline``: each partition's outcome; TimeoutException (naming what was
        pending) if a broker did not answer in time."""
        by_node = self.by_node(acks)
        if final:
            for node, session in self.sessions.items():
                if session.epoch > 0:
                    by_node.setdefault(node, {})
        started = trio.current_time()
        out: Results = {}
        late: list[str] = []
        for node, node_acks in by_node.items():
            got_lock = not self._lock(node).locked()
            if got_lock:   # attempt then check: a free session is used even with no time left
                self._lock(node).acquire_nowait()
            else:
                with trio.move_on_at(deadline):
                    await self._lock(node).acquire()
                    got_lock = True
            if not got_lock:
                carried = self.carrying.get(node)
                late.append(f"the ShareFetch in flight to broker {node} had not come back (a share session runs one "
                            f"request at a time), so the acknowledgements for it were not sent: {describe(node_acks)}"
                            + (f" (that ShareFetch carries {describe(carried)})" if carried else ""))
                if node_acks and not renew:
                    self._completed(node_acks, TimeoutException(f"{call}: {late[-1]}"))
                continue
            try:
                timeout = min(max(deadline - trio.current_time(), 0.001), self.request_timeout)
                results, error = await self._acknowledge(node, node_acks, timeout, renew=renew, final=final)
            finally:
                self._lock(node).release()
            if isinstance(error, TimeoutException):
                late.append(f"broker {node} did not answer ShareAcknowledge for {describe(node_acks)} ({error})")
            out.update(results)
            if not renew:
                for tp, outcome in results.items():
                    self._completed({tp: node_acks[tp]}, outcome)
        if late:
            raise TimeoutException(f"{call} gave up after {(trio.current_time() - started) * 1000:.0f} ms: "
                                   + "; ".join(late))
        return out

    async def _acknowledge(self, node: int, acks: Acks, timeout: float, *, renew: bool = False,
                           final: bool = False) -> tuple[Results, KafkaError | None]:
        """One ShareAcknowledge (held by the caller's lock on the session): each partition's outcome,
        and the error that failed them all, if one did."""
        session = self.session(node)
        body = session.acknowledge_body(self.group, self.member_id, acks, self._topic_ids(), final=final, renew=renew)
        if body is None:
            error = self._no_session(node, acks)
            return {tp: error for tp in acks}, error
        try:
            answer = await self.net.request(node, ApiKey.SHARE_ACKNOWLEDGE, body, timeout=timeout)
        except KafkaError as exc:
            session.restart()
            return {tp: exc for tp in acks}, exc
        if final:
            session.restart()
        else:
            session.answered(answer.error_code)
        if answer.error_code:
            error = error_for_code(answer.error_code, f"ShareAcknowledge to broker {node}: "
                                                      f"{ErrorCode(answer.error_code).name}")
            return {tp: error for tp in acks}, error
        if getattr(answer, "acquisition_lock_timeout_ms", 0):
            self.lock_timeout_ms = answer.acquisition_lock_timeout_ms
        names = self.metadata.topic_names
        out: Results = {tp: None for tp in acks}
        for topic in answer.responses:
            for part in topic.partitions:
                tp = TopicPartition(names.get(topic.topic_id, "?"), part.partition_index)
                if part.error_code:
                    out[tp] = error_for_code(part.error_code, part.error_message)
        return out, None

    def close(self) -> None:
        self.closed = True
        self.buffer.clear()
        self._data.set()
        self._ready.set()
