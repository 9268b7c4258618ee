"""The share consumer's async face: ``async with open_share_consumer(config) as c`` (Java's
``KafkaShareConsumer``, ``ShareConsumerImpl``).

    async with open_share_consumer({"bootstrap.servers": ..., "group.id": "sg"}) as c:
        c.subscribe(["orders"])
        for record in await c.poll(2.0):      # records acquired for this member, locked on the broker
            handle(record)                    # implicit mode: accepted by the next poll or commit

``poll`` never raises a timeout: at its deadline it returns what it has, possibly nothing, and a
ShareFetch still in flight is kept for the next poll. ``commit_sync`` waits for the answers at
most its ``timeout`` (default.api.timeout.ms) and raises TimeoutException naming the broker and
the acknowledgements still pending; the request it sends times out with it (min(time left,
request.timeout.ms)), so nothing it sent outlives it. ``close`` sends what is acknowledged,
closes the share sessions (epoch -1) and leaves the group (epoch -1) within its timeout, and never
raises one. Misuse raises IllegalStateError with Java's words.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import trio

from client.backoff import ExponentialBackoff
from client.consumer.coordinator import CoordinatorClient
from client.consumer.deadlines import api_deadline
from client.consumer.records import TopicPartition
from client.errors import KafkaError, TimeoutException
from client.exceptions import WakeupException
from client.metadata import ClusterMetadata, MetadataUpdater
from client.network import Connect, NetworkClient
from client.share.acknowledgements import AcknowledgeType, Acks, IllegalStateError, InFlight, ShareRecord
from client.share.config import share_consumer_config
from client.share.fetcher import Results, ShareFetcher
from client.share.membership import ShareMemberDriver, ShareMembership

AckCallback = Callable[[Results, "KafkaError | None"], Any]
# Java's AcknowledgementCommitCallback.onComplete(offsets, exception)
CommitCallback = Callable[[dict[TopicPartition, set[int]], "KafkaError | None"], Any]


class AsyncShareConsumer:
    def __init__(self, config: dict[str, Any], nursery: trio.Nursery, connect: Connect | None = None):
        self.config = c = share_consumer_config(config)
        self.nursery = nursery
        self.explicit = c["share.acknowledgement.mode"] == "explicit"
        self.net = NetworkClient(c, nursery, connect)
        backoff = ExponentialBackoff(c["retry.backoff.ms"], c["retry.backoff.max.ms"], self.net.rng)
        self.metadata = ClusterMetadata(c["metadata.max.age.ms"] / 1000, backoff)
        self.updater = MetadataUpdater(self.net, self.metadata, c["allow.auto.create.topics"])
        self.request_timeout = c["request.timeout.ms"] / 1000
        self.coordinator = CoordinatorClient(self.net, c["group.id"], self.request_timeout)
        self.membership: ShareMembership | None = None
        self.member: ShareMemberDriver | None = None
        self.fetcher: ShareFetcher | None = None
        self.in_flight = InFlight()
        self._renewing: trio.Event | None = None
        self._renewed: list[ShareRecord] = []
        self._renew_outcome: Results | KafkaError = {}   # the latest renewal's, for the commit that sent it
        self._wakeup = False
        self._poll_scope: trio.CancelScope | None = None
        self.closed = False
        self.close_report: list[str] = []    # what close could not do, in words
        self._commit_callback: CommitCallback | None = None
        self._outcomes: list[tuple[Acks, KafkaError | None]] = []   # for the commit callback

    # -- subscription ----------------------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Join the share group for these topics (in the background; ``poll`` waits for it)."""
        self._ensure_open()
        if not topics:
            raise KafkaError("subscribe() needs at least one topic (Java treats an empty list as unsubscribe())")
        if any(not t or not t.strip() for t in topics):
            raise KafkaError("Topic collection to subscribe to cannot contain null or empty topic")
        now = trio.current_time()
        if self.membership is not None and self.member is not None:
            self.membership.subscribe(list(topics), now)
            self.member.wake()
            return
        self.membership = ShareMembership(self.config, list(topics), now)
        self.fetcher = ShareFetcher(self.config, self.net, self.metadata, self.updater, self.nursery,
                                    self.membership.member_id)
        self.fetcher.on_completed = self._note_outcome
        self.member = ShareMemberDriver(self.membership, self.coordinator, self.metadata, self.updater,
                                        self.request_timeout, self.fetcher.assign)
        self.nursery.start_soon(self.member.run)

    def subscription(self) -> list[str]:
        return list(self.membership.topics) if self.membership is not None else []

    def assignment(self) -> list[TopicPartition]:
        return list(self.membership.assignment) if self.membership is not None else []

    @property
    def member_id(self) -> str | None:
        return self.membership.member_id if self.membership is not None else None

    def acquisition_lock_timeout_ms(self) -> int | None:
        """The lock the broker took on the records of the latest fetch (KIP-1222), None before one."""
        return self.fetcher.lock_timeout_ms if self.fetcher is not None else None

    # -- acknowledging ---------------------------------------------------------------------------
    def set_acknowledgement_commit_callback(self, callback: CommitCallback | None) -> None:
        """``callback(offsets, error)`` for every acknowledgement the brokers answered (``offsets``:
        partition -> offsets; ``error`` None, or why they were not taken), run by the next
        ``poll``, ``commit_sync``, ``commit_async`` or ``close``, as Java's
        AcknowledgementCommitCallback (not from inside the network's own tasks)."""
        self._ensure_open()
        self._commit_callback = callback
        if callback is None:
            self._outcomes.clear()

    def _note_outcome(self, acks: Acks, error: KafkaError | None) -> None:
        if self._commit_callback is not None:
            self._outcomes.append((acks, error))

    def _handle_completed(self) -> None:
        """Java's handleCompletedAcknowledgements: the commit callback, once per outcome."""
        outcomes, self._outcomes = self._outcomes, []
        if self._commit_callback is not None:
            for acks, error in outcomes:
                self._commit_callback({tp: set(offsets) for tp, offsets in acks.items()}, error)

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: say what became of a record of the last poll (sent with the next poll or commit)."""
        self._ensure_open()
        if not self.explicit:
            raise IllegalStateError("Implicit acknowledgement of delivery is being used. (acknowledge() needs "
                                    "share.acknowledgement.mode=explicit)")
        self.in_flight.acknowledge(record.topic, record.partition, record.offset, AcknowledgeType(type))

    def _settle_implicitly(self) -> None:
        if not self.explicit:
            self.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)

    # -- poll ------------------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make the current (or next) poll raise WakeupException at once, as Java."""
        self._wakeup = True
        if self._poll_scope is not None:
            self._poll_scope.cancel()

    async def poll(self, timeout: float = 0.0) -> list[ShareRecord]:
        """Records acquired for this member (up to max.poll.records), waiting at most ``timeout``
        seconds; never raises a timeout. Implicit mode accepts the last poll's records first;
        explicit mode refuses to poll while one is unacknowledged."""
        self._ensure_open()
        if self.membership is None or self.fetcher is None:
            raise IllegalStateError("Consumer is not subscribed to any topics.")
        if self.membership.error is not None:
            raise self.membership.error
        deadline = trio.current_time() + max(timeout, 0.0)
        self._handle_completed()
        if self.member is not None and self.member.poll_called(trio.current_time()):
            # the member left at max.poll.interval.ms and the broker gave its records to the
            # others: the last poll's records are no longer ours to acknowledge
            self.in_flight, self._renewing = InFlight(), None
        self._settle_implicitly()
        waiting = self.in_flight.unacknowledged()
        if self.explicit and waiting and self._renewing is None:
            raise IllegalStateError("All records must be acknowledged in explicit acknowledgement mode. "
                                    f"(not acknowledged: {len(waiting)} of the last poll's records: "
                                    f"{self.in_flight.describe()})")
        self._check_wakeup()
        final, renew = self.in_flight.take()
        if final:
            self.fetcher.queue(final)
        if renew:
            self._start_renewal(renew)
        if self._renewing is not None:
            return await self._renewal_outcome(deadline)
        with trio.move_on_at(deadline) as self._poll_scope:
            if self.member is not None:
                await self.member.joined.wait()
            await self.fetcher.wait_for_records()
        self._poll_scope = None
        self._check_wakeup()
        records = self.fetcher.take(self.config["max.poll.records"])
        self.in_flight = InFlight(records)
        return records

    def _start_renewal(self, renew: Acks, deadline: float | None = None, call: str = "renew") -> trio.Event:
        """RENEW (KIP-1222): the records stay this member's, their locks start over; the poll
        hands them out again once the broker has said so. ``deadline``: the calling commit's
        (else the request timeout's); the event is set when the broker answered or it passed,
        the outcome in ``_renew_outcome`` (each partition's, or the error that failed them)."""
        done = self._renewing = trio.Event()
        fetcher = self.fetcher
        assert fetcher is not None
        until = trio.current_time() + self.request_timeout if deadline is None else deadline

        async def run() -> None:
            try:
                results = await fetcher.acknowledge(renew, until, call, renew=True)
                self._renew_outcome = results
            except KafkaError as exc:
                results = {tp: KafkaError("renew failed") for tp in renew}
                self._renew_outcome = exc
            ok = {tp: offsets for tp, offsets in renew.items() if results.get(tp) is None}
            self._renewed = self.in_flight.renewed(ok)
            lost = {(r.topic, r.partition, r.offset) for r in self.in_flight.records} - \
                   {(r.topic, r.partition, r.offset) for r in self._renewed}
            for key in lost:   # not renewed: the broker no longer holds them for us
                self.in_flight.types.pop(key, None)
            done.set()

        self.nursery.start_soon(run)
        return done

    def _renew_with_commit(self, deadline: float, call: str) -> trio.Event | None:
        """A commit sends the RENEW marks too, as Java's commitSync and commitAsync do
        (ShareInFlightBatch.takeAcknowledgedRecords takes them with the others): a member that goes
        on processing without polling keeps its records; the next poll hands them out again."""
        _, renew = self.in_flight.take()   # the final ones were taken already (_to_send)
        return self._start_renewal(renew, deadline, call) if renew else None

    async def _renewal_outcome(self, deadline: float) -> list[ShareRecord]:
        assert self._renewing is not None
        with trio.move_on_at(deadline):
            await self._renewing.wait()
        if not self._renewing.is_set():
            return []   # still on its way: the next poll hands them out
        self._renewing = None
        # those the application acknowledged again while the renewal was on its way are settled
        records = [r for r in self._renewed if (r.topic, r.partition, r.offset) in self.in_flight.types]
        self._renewed = []
        self.in_flight = InFlight(records)
        return records

    def _check_wakeup(self) -> None:
        if self._wakeup:
            self._wakeup = False
            raise WakeupException("poll() was interrupted by wakeup()")

    # -- commits ---------------------------------------------------------------------------------
    def _to_send(self) -> Acks:
        self._settle_implicitly()
        assert self.fetcher is not None
        final, _ = self.in_flight.take(renewals=False)
        pending = self.fetcher.take_pending()
        for tp, offsets in final.items():
            pending.setdefault(tp, {}).update(offsets)
        return pending

    async def commit_sync(self, timeout: float | None = None) -> Results:
        """Send the acknowledgements so far and wait for them, at most ``timeout``
        (default.api.timeout.ms): each partition's outcome (None: done; else the error, e.g.
        InvalidRecordStateError for a record whose lock had run out). RENEW marks go too: their
        records come back from the next poll. TimeoutException, naming what was pending, if a
        broker did not answer in time."""
        self._ensure_open()
        if self.fetcher is None:
            return {}
        deadline = api_deadline(self.config, timeout)
        self._handle_completed()
        acks = self._to_send()
        renewing = self._renew_with_commit(deadline, "commit_sync()")
        if not acks and renewing is None:
            return {}
        try:
            results = await self.fetcher.acknowledge(acks, deadline, "commit_sync()") if acks else {}
            if renewing is not None:
                with trio.move_on_at(deadline):
                    await renewing.wait()
                outcome = self._renew_outcome if renewing.is_set() else TimeoutException(
                    "commit_sync(): the renewal (RENEW) had no answer by the call's deadline")
                if isinstance(outcome, KafkaError):
                    raise outcome
                results.update(outcome)
            return results
        finally:
            self._handle_completed()

    def commit_async(self, callback: AckCallback | None = None) -> None:
        """Send the acknowledgements so far in the background; ``callback(results, error)`` when done."""
        self._ensure_open()
        if self.fetcher is None:
            return
        self._handle_completed()
        acks = self._to_send()
        self._renew_with_commit(api_deadline(self.config, None), "commit_async()")
        if not acks:
            return
        fetcher = self.fetcher

        async def run() -> None:
            results: Results = {}
            error = None
            try:
                results = await fetcher.acknowledge(acks, api_deadline(self.config, None), "commit_async()")
            except KafkaError as exc:
                error = exc
            if callback is not None:
                callback(results, error)

        self.nursery.start_soon(run)

    # -- closing ---------------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self.closed:
            raise IllegalStateError("This consumer has already been closed.")

    async def aclose(self, timeout: float | None = None) -> list[str]:
        """Send what is acknowledged (implicit mode: the last poll's records, accepted), closing
        each share session (epoch -1), then leave the group (epoch -1): all within ``timeout``
        (default 30 s). Never raises a timeout; returns what could not be done, in words."""
        if self.closed:
            return []
        self.closed = True
        missed = await self._leave("close()", trio.current_time() + (30.0 if timeout is None else max(timeout, 0.0)))
        self._handle_completed()
        self.net.close()
        self.close_report = missed
        return missed

    async def unsubscribe(self, timeout: float | None = None) -> list[str]:
        """Leave the share group as ``close`` does (within ``timeout``, default.api.timeout.ms),
        keeping the consumer: ``subscribe`` joins again, as a new member. Returns what could not
        be done, in words."""
        self._ensure_open()
        missed = await self._leave("unsubscribe()", api_deadline(self.config, timeout))
        self.membership = self.member = self.fetcher = None
        self.in_flight, self._renewing = InFlight(), None
        return missed

    async def _leave(self, call: str, deadline: float) -> list[str]:
        missed: list[str] = []
        if self.fetcher is not None:
            acks = self._to_send()
            try:
                results = await self.fetcher.acknowledge(acks, deadline, call, final=True)
                missed += [f"{tp.topic}-{tp.partition}: {err}" for tp, err in results.items() if err is not None]
            except TimeoutException as exc:
                missed.append(str(exc))
            self.fetcher.close()
        if self.member is not None:
            left = deadline - trio.current_time()
            if left <= 0 or not await self.member.leave(min(left, self.request_timeout)):
                missed.append(f"{call} did not leave the share group '{self.config['group.id']}' (no time left, "
                              "or no answer): the broker drops the member at group.share.session.timeout.ms")
        return missed


@contextlib.asynccontextmanager
async def open_share_consumer(config: dict[str, Any], connect: Connect | None = None) -> AsyncIterator[AsyncShareConsumer]:
    async with trio.open_nursery() as nursery:
        consumer = AsyncShareConsumer(config, nursery, connect)
        try:
            yield consumer
            await consumer.aclose()
        finally:
            consumer.closed = True
            consumer.net.close()
            nursery.cancel_scope.cancel()
