"""The consumer's async face: ``async with client.open_consumer(config) as c``.

Every call that waits takes ``timeout`` (seconds) or falls back to default.api.timeout.ms
(KIP-266), and is attempt-then-check (``client.consumer.deadlines``): at least one request goes
out even with timeout 0, the deadline is looked at only after an attempt fails, and each
attempt's request timeout is min(time left in the call, request.timeout.ms), so a call that
gives up leaves nothing in flight past its deadline (the rule broker-emu adopts from the seed
design; Java's consumer keeps request.timeout.ms per request). ``poll`` never raises a timeout:
at its deadline it returns what it has, possibly nothing, and a fetch still in flight is kept
for the next poll.

The parts: the ``Fetcher`` (positions, buffer, Fetch and ListOffsets), the ``CoordinatorClient``
(the group's coordinator and one attempt of each offset call) and, after ``subscribe``, a
``GroupDriver`` running the sans-io ``Membership`` in the background.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import trio

from client.backoff import ExponentialBackoff
from client.config import consumer_config
from client.consumer import requests
from client.consumer.coordinator import CoordinatorClient
from client.consumer.deadlines import Attempt, api_deadline, attempt_then_check
from client.consumer.fetcher import Fetcher
from client.consumer.group import Callback, GroupDriver, RunCallback, call_back
from client.consumer.group848 import Group848Driver
from client.consumer.membership import Membership
from client.consumer.membership848 import Membership848
from client.consumer.records import ConsumerRecord, TopicPartition
from client.errors import ErrorCode, KafkaError, TimeoutException, error_for_code
from client.exceptions import WakeupException
from client.metadata import ClusterMetadata, MetadataUpdater
from client.network import Connect, NetworkClient
from client.protocol import ApiKey

Offsets = Mapping[Any, int]   # (topic, partition) -> offset


class AsyncConsumer:
    def __init__(self, config: dict[str, Any], nursery: trio.Nursery, connect: Connect | None = None, *,
                 run_callback: RunCallback = call_back):
        """``run_callback``: how the group runs a rebalance callback (default: on the group's own
        task, awaiting an ``async def`` one; the blocking face passes one that hands it to the
        application thread)."""
        self.config = c = consumer_config(config)
        self.nursery = nursery
        self.run_callback = run_callback
        self.net = NetworkClient(c, nursery, connect)
        # the producer's metadata layer: leaders, brokers, bootstrap fallback, and a refresh
        # requested by every disconnect (the updater listens) and by stale-metadata errors
        retry_backoff = ExponentialBackoff(c["retry.backoff.ms"], c["retry.backoff.max.ms"], self.net.rng)
        self.metadata = ClusterMetadata(c["metadata.max.age.ms"] / 1000, retry_backoff)
        self.updater = MetadataUpdater(self.net, self.metadata, c["allow.auto.create.topics"])
        self.request_timeout = c["request.timeout.ms"] / 1000
        self.coordinator = CoordinatorClient(self.net, c["group.id"] or "", self.request_timeout,
                                             require_stable=c["isolation.level"] == "read_committed")
        self.fetcher = Fetcher(c, self.net, self.metadata, self.updater, nursery, functools.partial(attempt_then_check, c))
        self.group: GroupDriver | None = None
        self._wakeup = False
        self._wakeup_event = trio.Event()
        self.last_poll = trio.current_time()
        self._next_auto_commit = trio.current_time() + c["auto.commit.interval.ms"] / 1000

    # -- deadlines -----------------------------------------------------------------------------
    def _deadline(self, timeout: float | None) -> float:
        return api_deadline(self.config, timeout)

    async def _attempt_then_check(self, call: str, deadline: float, attempt: Attempt, waiting_for: Callable[[], str]) -> Any:
        return await attempt_then_check(self.config, call, deadline, attempt, waiting_for)

    def _group_id(self) -> str:
        if not self.config["group.id"]:
            raise KafkaError("this call needs group.id")
        return self.config["group.id"]

    # -- assignment ------------------------------------------------------------------------------
    def assign(self, partitions: list[TopicPartition]) -> None:
        if self.group is not None:
            raise KafkaError("assign() and subscribe() exclude each other: unsubscribe() first")
        self.fetcher.assign(TopicPartition(*tp) for tp in partitions)

    def subscribe(self, topics: list[str] | None = None, pattern: str | re.Pattern | None = None,
                  on_assign: Callback | None = None, on_revoke: Callback | None = None) -> None:
        """Join the group (group.id) for these topics, or every topic matching ``pattern``; the
        partitions come from the group's assignor. Joining happens in the background; ``poll``
        waits for it within its own timeout."""
        self._group_id()
        if (topics is None) == (pattern is None):
            raise KafkaError("subscribe() takes topics or a pattern")
        if self.fetcher.positions and self.group is None:
            raise KafkaError("assign() and subscribe() exclude each other: assign([]) first")
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        topic_list = list(topics) if topics is not None else None
        now = self.last_poll = trio.current_time()
        if self.group is not None:
            self.group.subscribe(topic_list, compiled, on_assign, on_revoke, now)
            return
        if str(self.config["group.protocol"]).lower() == "consumer":   # KIP-848
            self.group = Group848Driver(Membership848(self.config, topic_list, compiled, now), self.config,  # type: ignore[arg-type]
                                        self.coordinator, self.fetcher, self.metadata, self.updater, self.committed,
                                        on_assign, on_revoke, self.run_callback)
        else:
            self.group = GroupDriver(Membership(self.config, topic_list, compiled, now), self.config, self.coordinator,
                                     self.fetcher, self.metadata, self.updater, self.committed, on_assign, on_revoke,
                                     self.run_callback)
        self.nursery.start_soon(self.group.run)

    async def unsubscribe(self) -> None:
        if self.group is not None:
            group, self.group = self.group, None
            await group.close("the consumer unsubscribed")

    def assignment(self) -> list[TopicPartition]:
        if self.group is not None:
            return self.group.assignment
        return sorted(self.fetcher.positions)

    # -- positions ---------------------------------------------------------------------------------
    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.fetcher.seek(TopicPartition(*tp), offset)

    def seek_to_beginning(self, tps: list[TopicPartition] | None = None) -> None:
        """Lazily (at the next poll or position): the log start offset, as Java."""
        self.fetcher.seek_to(None if tps is None else [TopicPartition(*t) for t in tps], "earliest")

    def seek_to_end(self, tps: list[TopicPartition] | None = None) -> None:
        self.fetcher.seek_to(None if tps is None else [TopicPartition(*t) for t in tps], "latest")

    def pause(self, tps: list[TopicPartition]) -> None:
        """No fetching, and poll returns nothing, for these partitions until resume()."""
        self.fetcher.pause(TopicPartition(*tp) for tp in tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self.fetcher.resume(TopicPartition(*tp) for tp in tps)

    async def position(self, tp: TopicPartition, timeout: float | None = None) -> int:
        return await self.fetcher.position(TopicPartition(*tp), self._deadline(timeout))

    async def beginning_offsets(self, tps, timeout: float | None = None) -> dict:
        return await self._offsets_call("beginning_offsets()", tps, -2, timeout)

    async def end_offsets(self, tps, timeout: float | None = None) -> dict:
        return await self._offsets_call("end_offsets()", tps, -1, timeout)

    async def offsets_for_times(self, tps_to_ts: dict, timeout: float | None = None) -> dict:
        out = {}
        deadline = self._deadline(timeout)
        for tp, ts in tps_to_ts.items():
            got = await self._attempt_then_check("offsets_for_times()", deadline,
                                                 functools.partial(self.fetcher.list_offsets, [TopicPartition(*tp)], ts),
                                                 lambda: "the partition leader did not answer ListOffsets")
            out.update(got)
        return out

    async def _offsets_call(self, call: str, tps, ts: int, timeout: float | None) -> dict:
        tps = [TopicPartition(*tp) for tp in tps]
        got = await self._attempt_then_check(call, self._deadline(timeout), functools.partial(self.fetcher.list_offsets, tps, ts),
                                             lambda: "the partition leaders did not answer ListOffsets")
        return {tp: offset for tp, (offset, _) in got.items()}

    # -- cluster ------------------------------------------------------------------------------------
    async def list_topics(self, timeout: float | None = None) -> dict[str, list[int]]:
        """Every topic with its partition ids (Metadata for all topics, attempt-then-check)."""
        async def attempt(rt: float) -> dict[str, list[int]]:
            md = await self.updater.refresh(deadline=trio.current_time() + rt, all_topics=True)
            return {t.name: sorted(p.partition_index for p in t.partitions) for t in md.topics if t.error_code == ErrorCode.NONE}

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
                                            requests.telemetry_subscriptions(), timeout=rt)
            if answer.error_code:
                raise error_for_code(answer.error_code)
            return answer.client_instance_id

        return await self._attempt_then_check("client_instance_id()", self._deadline(timeout), attempt,
                                              lambda: "no broker answered GetTelemetrySubscriptions")

    # -- poll ----------------------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make the current (or next) poll raise WakeupException at once, as Java."""
        self._wakeup = True
        self._wakeup_event.set()

    async def poll(self, timeout: float = 0.0) -> list[ConsumerRecord]:
        """Return buffered records (up to max.poll.records); wait for data at most ``timeout``
        seconds; never raises a timeout. A fetch in flight at the deadline stays in flight."""
        now = self.last_poll = trio.current_time()
        deadline = now + max(timeout, 0.0)
        if self.group is not None:
            self.group.poll_called(now)
            self._maybe_auto_commit()
        self._check_wakeup()
        with trio.move_on_at(deadline):
            async with trio.open_nursery() as waiting:
                waiting.start_soon(self._cancel_on_wakeup, waiting.cancel_scope)
                if self.group is not None:
                    waiting.start_soon(self._still_polling, self.group)
                    if self.group.watches_metadata():
                        waiting.start_soon(self._group_follows_metadata, self.group)
                await self._wait_for_records(deadline)
                waiting.cancel_scope.cancel()
        self._check_wakeup()
        return self.fetcher.take(self.config["max.poll.records"])

    async def _wait_for_records(self, deadline: float) -> None:
        """Until records are ready; an assignment that settles meanwhile has its missing positions
        looked up in this poll, as each pass of Java's poll loop does."""
        while True:
            if self.group is not None and not self.group.is_active():
                await self.group.wait_active()
            settled = self.fetcher.settled
            unknown = self.fetcher.missing_positions()
            if unknown:
                with contextlib.suppress(TimeoutException):
                    await self.fetcher.reset_positions(unknown, deadline)
            if await self.fetcher.wait_for_records(settled):
                return

    async def _group_follows_metadata(self, group: GroupDriver) -> None:
        """While poll waits, each refresh is shown to the classic group (it may rejoin), as Java's
        poll loop runs the coordinator's poll after each response, not only when poll is called."""
        while True:
            await self.updater.wait_for_update()
            group.metadata_updated()

    async def _still_polling(self, group: GroupDriver) -> None:
        """Each heartbeat interval of a long poll tells the group the application is still in it
        (a pass of Java's poll loop lasts at most until the next heartbeat is due)."""
        period = min(self.config["heartbeat.interval.ms"], self.config["max.poll.interval.ms"] / 2) / 1000
        while True:
            await trio.sleep(period)
            group.still_polling(trio.current_time())

    async def _cancel_on_wakeup(self, scope: trio.CancelScope) -> None:
        await self._wakeup_event.wait()
        scope.cancel()

    def _check_wakeup(self) -> None:
        if self._wakeup:
            self._wakeup = False
            self._wakeup_event = trio.Event()
            raise WakeupException("poll() was interrupted by wakeup()")

    # -- offsets in the group --------------------------------------------------------------------
    async def committed(self, tps, timeout: float | None = None) -> dict:
        group_id = self._group_id()
        coordinator = self.coordinator
        attempt = functools.partial(coordinator.committed, [TopicPartition(*tp) for tp in tps])

        def waiting_for() -> str:
            where = f"broker {coordinator.last}" if coordinator.last is not None else "not found"
            return f"the group coordinator for '{group_id}' ({where}) did not answer"

        return await self._attempt_then_check("committed()", self._deadline(timeout), attempt, waiting_for)

    async def commit_sync(self, offsets: Offsets | None = None, timeout: float | None = None) -> None:
        """Commit ``offsets`` (default: the current positions). In a group, as this member of its
        generation: a fenced commit raises CommitFailedException (not retried)."""
        group_id = self._group_id()
        chosen = {TopicPartition(*tp): o for tp, o in (offsets or self.fetcher.known_positions()).items()}
        if not chosen:
            return
        group = self.group

        async def attempt(rt: float) -> None:
            if group is not None:
                await group.commit(chosen, rt)
                return
            code = await self.coordinator.commit(chosen, rt)
            if code:
                raise error_for_code(code)

        await self._attempt_then_check("commit_sync()", self._deadline(timeout), attempt,
                                       lambda: f"the group coordinator for '{group_id}' did not answer OffsetCommit")

    def commit_async(self, offsets: Offsets | None = None,
                     callback: Callable[[KafkaError | None, dict], Any] | None = None) -> None:
        """Commit in the background; ``callback(error or None, offsets)`` runs when it ends."""
        chosen = dict(offsets) if offsets else self.fetcher.known_positions()

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
        if self.config["enable.auto.commit"] and now >= self._next_auto_commit and self.group is not None \
                and self.group.is_active():
            self._next_auto_commit = now + self.config["auto.commit.interval.ms"] / 1000
            self.commit_async()

    # -- closing -----------------------------------------------------------------------------------
    async def aclose(self, timeout: float | None = None) -> None:
        """Close cleanly: commit (enable.auto.commit) and leave the group, let fetches in flight
        finish (the broker answers a long poll within fetch.max.wait.ms) so no request is
        abandoned, but never wait past ``timeout`` (default 30 s, Kafka's close timeout); then
        drop the connections. Never raises a timeout."""
        with trio.move_on_after(30.0 if timeout is None else max(timeout, 0.0)):
            if self.group is not None:
                if self.config["enable.auto.commit"] and self.group.is_active():
                    with contextlib.suppress(KafkaError):
                        await self.commit_sync(None, self.request_timeout)
                await self.group.close()
            await self.fetcher.wait_idle()
        self.close()

    def close(self) -> None:
        self.fetcher.close()
        self.net.close()


@contextlib.asynccontextmanager
async def open_consumer(config: dict[str, Any], connect: Connect | None = None, *,
                        run_callback: RunCallback = call_back) -> AsyncIterator[AsyncConsumer]:
    async with trio.open_nursery() as nursery:
        consumer = AsyncConsumer(config, nursery, connect, run_callback=run_callback)
        try:
            yield consumer
            await consumer.aclose()
        finally:
            consumer.close()
            nursery.cancel_scope.cancel()

