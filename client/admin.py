"""Our admin client (trio face): the calls a test suite's set-up and edge cases make, each with a
KIP-266 deadline, as Java's KafkaAdminClient runs them.

Every call takes ``timeout`` (seconds; None: default.api.timeout.ms) and ends by then. Inside it,
each attempt's request timeout is min(time left, request.timeout.ms) (client/consumer/deadlines.py),
retriable failures — a lost connection, NOT_CONTROLLER, a leader that moved — are retried with
backoff on the items still pending, and an admin write's ``timeout_ms`` field carries the time
left (less BROKER_MARGIN_S, so the broker's answer at its deadline arrives within ours), which a
KRaft controller turns into its own deadline (docs/admin.md). Per-item outcomes come
back as ``{item: None | KafkaError}``, as Java's per-item futures do; a call that runs out of time
raises TimeoutException naming what it still waited for.

    async with open_admin({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
        errors = await admin.create_topics([NewTopic("orders", 3, 1)], timeout=5)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from client.admin_cluster import RETRY_ITEM, ClusterAdminCalls
from client.admin_share import ShareAdminCalls
from client.config import COMMON, parse_config
from client.consumer.deadlines import api_deadline, attempt_then_check
from client.errors import ErrorCode, KafkaError, TimeoutException, error_for_code
from client.network import NetworkClient
from client.protocol import ApiKey
from client.transport import Connect

ADMIN: dict[str, Any] = {**COMMON, "default.api.timeout.ms": 60000}
# an admin write's timeout_ms is the time left less this, so the broker's own answer at its
# deadline (a KRaft controller's REQUEST_TIMED_OUT) reaches us before the call's deadline
BROKER_MARGIN_S = 0.1
TOPIC, BROKER = 2, 4          # ConfigResource types
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3   # IncrementalAlterConfigs operations


@dataclass
class NewTopic:
    name: str
    num_partitions: int = -1          # -1: the broker's num.partitions
    replication_factor: int = -1      # -1: the broker's default.replication.factor
    configs: dict[str, str] = field(default_factory=dict)


class _Retry(KafkaError):
    """Some items got an answer that says to try again: the attempt loop retries them."""
    retriable = True


class AsyncAdmin(ClusterAdminCalls, ShareAdminCalls):
    def __init__(self, config: Mapping[str, Any], nursery: trio.Nursery, connect: Connect | None = None, *,
                 broker_margin_s: float = BROKER_MARGIN_S):
        """``broker_margin_s``: how much sooner than the call's deadline a write's ``timeout_ms``
        ends (a test that divides every time by a scale divides this too)."""
        self.config = parse_config(config, ADMIN)
        self.net = NetworkClient(self.config, nursery, connect)
        self.broker_margin_s = broker_margin_s

    def close(self) -> None:
        self.net.close()

    # -- the call loop ------------------------------------------------------------------------
    async def _per_item(self, call: str, items: Iterable[Any], timeout: float | None,
                        send: Callable[[list[Any], float, float], Awaitable[dict[Any, int | KafkaError]]]) -> dict[Any, KafkaError | None]:
        """Run ``send(pending, request_timeout, deadline) -> {item: error code or error}`` until
        every item has a final answer; items answered with a RETRY_ITEM code go again."""
        deadline = api_deadline(self.config, timeout)
        results: dict[Any, KafkaError | None] = {}
        pending = list(dict.fromkeys(items))

        async def attempt(request_timeout: float) -> None:
            nonlocal pending
            answers = await send(pending, request_timeout, deadline)
            again = []
            for item in pending:
                outcome = answers.get(item, ErrorCode.UNKNOWN_SERVER_ERROR)
                if isinstance(outcome, int) and outcome in RETRY_ITEM:
                    again.append(item)
                    results[item] = error_for_code(outcome)
                elif isinstance(outcome, int):
                    results[item] = error_for_code(outcome) if outcome else None
                else:
                    results[item] = outcome
            pending = again
            if again:
                raise _Retry(f"{len(again)} item(s) to ask again: {results[again[0]]}")

        if pending:
            await self._bounded(call, deadline, attempt,
                                lambda: f"{len(pending)} item(s) without an answer ({', '.join(map(str, pending[:3]))})")
        return results

    async def _once(self, call: str, timeout: float | None, send: Callable[[float], Awaitable[Any]]) -> Any:
        return await self._bounded(call, api_deadline(self.config, timeout), send, lambda: "an answer")

    async def _bounded(self, call: str, deadline: float, attempt: Callable[[float], Awaitable[Any]],
                       waiting_for: Callable[[], str]) -> Any:
        """The attempt loop, stopped at the deadline even mid-attempt (a broker that never lets
        the connection finish)."""
        started = trio.current_time()
        with trio.move_on_at(deadline):
            return await attempt_then_check(self.config, call, deadline, attempt, waiting_for)
        raise TimeoutException(f"{call} gave up after {(trio.current_time() - started) * 1000:.0f} ms: {waiting_for()}")

    async def _metadata(self, topics: list[str] | None, request_timeout: float) -> Any:
        body = {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": False}
        self.net.metadata_attempt()   # rebootstraps first if no answer helped for the trigger time (KIP-1102)
        node = self.net.least_loaded_node(metadata=True)
        md = await self.net.request(node, ApiKey.METADATA, body, timeout=request_timeout)
        unusable = self.net.metadata_answered(node, md)
        if unusable is not None:   # the call's attempt loop asks again, within its deadline
            starving = self.net.describe_starving()
            raise _Retry(str(unusable) + (f"; {starving}" if starving else ""))
        self.net.nodes.update({b.node_id: (b.host, b.port) for b in md.brokers})
        return md

    async def _controller(self, request_timeout: float) -> int:
        md = await self._metadata([], request_timeout)
        if md.controller_id < 0:
            raise error_for_code(ErrorCode.NOT_CONTROLLER, "no controller known yet")
        return md.controller_id

    async def _coordinator(self, group: str, request_timeout: float) -> int:
        """The group's coordinator (FindCoordinator v3: one key, as every broker version takes)."""
        found = await self.net.request(self.net.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                       {"key": group, "key_type": 0, "coordinator_keys": [group]},
                                       timeout=request_timeout, max_version=3)
        if found.error_code:
            raise error_for_code(found.error_code, found.get("error_message"))
        self.net.nodes[found.node_id] = (found.host, found.port)
        return found.node_id

    def _timeout_ms(self, deadline: float) -> int:
        return max(0, int((deadline - trio.current_time() - self.broker_margin_s) * 1000))

    # -- topics ---------------------------------------------------------------------------------
    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool = False,
                            timeout: float | None = None) -> dict[str, KafkaError | None]:
        by_name = {t.name: t for t in topics}

        async def send(names: list[str], request_timeout: float, deadline: float) -> dict:
            body = {"topics": [{"name": n, "num_partitions": by_name[n].num_partitions,
                                "replication_factor": by_name[n].replication_factor, "assignments": [],
                                "configs": [{"name": k, "value": v} for k, v in by_name[n].configs.items()]}
                               for n in names], "timeout_ms": self._timeout_ms(deadline), "validate_only": validate_only}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.CREATE_TOPICS, body,
                                            timeout=request_timeout)
            return {t.name: _error(t) for t in answer.topics}

        return await self._per_item("create_topics", by_name, timeout, send)

    async def delete_topics(self, names: list[str], *, timeout: float | None = None) -> dict[str, KafkaError | None]:
        async def send(pending: list[str], request_timeout: float, deadline: float) -> dict:
            body = {"topic_names": pending, "topics": [{"name": n, "topic_id": None} for n in pending],
                    "timeout_ms": self._timeout_ms(deadline)}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.DELETE_TOPICS, body,
                                            timeout=request_timeout)
            return {r.name: _error(r) for r in answer.responses}

        return await self._per_item("delete_topics", names, timeout, send)

    async def create_partitions(self, totals: Mapping[str, int], *, validate_only: bool = False,
                                timeout: float | None = None) -> dict[str, KafkaError | None]:
        async def send(pending: list[str], request_timeout: float, deadline: float) -> dict:
            body = {"topics": [{"name": n, "count": totals[n], "assignments": None} for n in pending],
                    "timeout_ms": self._timeout_ms(deadline), "validate_only": validate_only}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.CREATE_PARTITIONS, body,
                                            timeout=request_timeout)
            return {r.name: _error(r) for r in answer.results}

        return await self._per_item("create_partitions", totals, timeout, send)

    async def delete_records(self, before: Mapping[tuple[str, int], int], *,
                             timeout: float | None = None) -> dict[tuple[str, int], KafkaError | int]:
        """Delete each partition's records below an offset (-1: the high watermark); the answer
        per partition is its new low watermark or the error. Sent to each leader with the time
        left as ``timeout_ms``, which the broker's DeleteRecords purgatory waits at most."""
        lows: dict[tuple[str, int], int] = {}

        async def send(pending: list[tuple[str, int]], request_timeout: float, deadline: float) -> dict:
            md = await self._metadata(sorted({t for t, _ in pending}), request_timeout)
            leaders = {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}
            out: dict[Any, int | KafkaError] = {tp: ErrorCode.LEADER_NOT_AVAILABLE for tp in pending if leaders.get(tp, -1) < 0}
            for leader in sorted({leaders[tp] for tp in pending if leaders.get(tp, -1) >= 0}):
                mine = [tp for tp in pending if leaders.get(tp) == leader]
                topics: dict[str, list] = {}
                for t, p in mine:
                    topics.setdefault(t, []).append({"partition_index": p, "offset": before[(t, p)]})
                body = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                        "timeout_ms": self._timeout_ms(deadline)}
                answer = await self.net.request(leader, ApiKey.DELETE_RECORDS, body, timeout=request_timeout)
                for t in answer.topics:
                    for p in t.partitions:
                        out[(t.name, p.partition_index)] = p.error_code
                        lows[(t.name, p.partition_index)] = p.low_watermark
            return out

        errors = await self._per_item("delete_records", before, timeout, send)
        return {tp: (err if err is not None else lows[tp]) for tp, err in errors.items()}

    # -- configs --------------------------------------------------------------------------------
    async def describe_configs(self, resources: list[tuple[int, str]], *,
                               timeout: float | None = None) -> dict[tuple[int, str], dict[str, str | None] | KafkaError]:
        async def send(request_timeout: float) -> Any:
            body = {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": None} for t, n in resources],
                    "include_synonyms": False, "include_documentation": False}
            return await self.net.request(self.net.least_loaded_node(), ApiKey.DESCRIBE_CONFIGS, body, timeout=request_timeout)

        answer = await self._once("describe_configs", timeout, send)
        return {(r.resource_type, r.resource_name): (_error(r, r.error_message) or {c.name: c.value for c in r.configs})
                for r in answer.results}

    async def incremental_alter_configs(self, changes: Mapping[tuple[int, str], list[tuple[str, int, str | None]]], *,
                                        validate_only: bool = False,
                                        timeout: float | None = None) -> dict[tuple[int, str], KafkaError | None]:
        """``{(TOPIC, "orders"): [("retention.ms", SET, "1000")]}``."""
        async def send(pending: list[tuple[int, str]], request_timeout: float, deadline: float) -> dict:
            body = {"resources": [{"resource_type": t, "resource_name": n, "configs": [
                {"name": k, "config_operation": op, "value": v} for k, op, v in changes[(t, n)]]} for t, n in pending],
                "validate_only": validate_only}
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.INCREMENTAL_ALTER_CONFIGS, body,
                                            timeout=request_timeout)
            return {(r.resource_type, r.resource_name): _error(r, r.error_message) for r in answer.responses}

        return await self._per_item("incremental_alter_configs", changes, timeout, send)

    # -- cluster, groups, ACLs --------------------------------------------------------------------
    async def describe_cluster(self, *, timeout: float | None = None) -> Any:
        async def send(request_timeout: float) -> Any:
            body = {"include_cluster_authorized_operations": False, "endpoint_type": 1}
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.DESCRIBE_CLUSTER, body,
                                            timeout=request_timeout)
            if answer.error_code:
                raise error_for_code(answer.error_code, answer.error_message)
            return answer

        return await self._once("describe_cluster", timeout, send)

    async def delete_groups(self, groups: list[str], *, timeout: float | None = None) -> dict[str, KafkaError | None]:
        async def send(pending: list[str], request_timeout: float, deadline: float) -> dict:
            out: dict[Any, int | KafkaError] = {}
            for group in pending:
                try:
                    coordinator = await self._coordinator(group, request_timeout)
                except KafkaError as exc:
                    out[group] = exc.code if exc.code is not None else exc
                    continue
                answer = await self.net.request(coordinator, ApiKey.DELETE_GROUPS, {"groups_names": [group]},
                                                timeout=request_timeout)
                out[group] = answer.results[0].error_code
            return out

        return await self._per_item("delete_groups", groups, timeout, send)

    async def create_acls(self, acls: list[Mapping[str, Any]], *, timeout: float | None = None) -> list[KafkaError | None]:
        """Each ACL as CreateAcls names its fields (resource_type, resource_name,
        resource_pattern_type, principal, host, operation, permission_type)."""
        async def send(request_timeout: float) -> Any:
            return await self.net.request(self.net.least_loaded_node(), ApiKey.CREATE_ACLS, {"creations": list(acls)},
                                          timeout=request_timeout)

        answer = await self._once("create_acls", timeout, send)
        return [_error(r, r.error_message) for r in answer.results]

    async def describe_acls(self, acl_filter: Mapping[str, Any], *, timeout: float | None = None) -> list[dict[str, Any]]:
        async def send(request_timeout: float) -> Any:
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.DESCRIBE_ACLS, dict(acl_filter),
                                            timeout=request_timeout)
            if answer.error_code:
                raise error_for_code(answer.error_code, answer.error_message)
            return answer

        answer = await self._once("describe_acls", timeout, send)
        return [{"resource_type": r.resource_type, "resource_name": r.resource_name, "pattern_type": r.pattern_type, **a}
                for r in answer.resources for a in r.acls]

    async def delete_acls(self, filters: list[Mapping[str, Any]], *, timeout: float | None = None) -> list[list[dict] | KafkaError]:
        async def send(request_timeout: float) -> Any:
            return await self.net.request(self.net.least_loaded_node(), ApiKey.DELETE_ACLS,
                                          {"filters": [dict(f) for f in filters]}, timeout=request_timeout)

        answer = await self._once("delete_acls", timeout, send)
        return [_error(r, r.error_message) or [dict(m) for m in r.matching_acls] for r in answer.filter_results]


def _error(item: Any, message: str | None = None) -> KafkaError | None:
    code = item.error_code
    if not code:
        return None
    return error_for_code(code, message if message is not None else item.get("error_message"))


@asynccontextmanager
async def open_admin(config: Mapping[str, Any], connect: Connect | None = None, **admin_kwargs: Any) -> AsyncIterator[AsyncAdmin]:
    async with trio.open_nursery() as nursery:
        admin = AsyncAdmin(config, nursery, connect, **admin_kwargs)
        try:
            yield admin
        finally:
            admin.close()
            nursery.cancel_scope.cancel()
