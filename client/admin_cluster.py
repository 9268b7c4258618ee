"""The rest of our admin face: leader elections, group offset deletion, log dirs,
partition reassignments, client quotas and SCRAM credentials — each call under its KIP-266
deadline like the others (client/admin.py), sent where Java's KafkaAdminClient sends it: the
controller for elections and reassignments, the group's coordinator for OffsetDelete, every
broker named for DescribeLogDirs, any broker for the rest.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from client.consumer.deadlines import api_deadline
from client.errors import ErrorCode, KafkaError, error_for_code
from client.network import NetworkClient
from client.protocol import ApiKey

# answers that mean "ask again, elsewhere" (Java's admin retries these per item)
RETRY_ITEM = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                        ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})

PREFERRED, UNCLEAN = 0, 1                              # ElectLeaders' election types
SCRAM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # ScramMechanism's wire values
SCRAM_HASHES = {1: "sha256", 2: "sha512"}

TopicPartition = tuple[str, int]
PerItem = Callable[[str, Iterable[Any], float | None, Callable[[list[Any], float, float], Awaitable[dict]]],
                   Awaitable[dict[Any, KafkaError | None]]]


def _error(code: int, message: str | None = None) -> KafkaError | None:
    return error_for_code(code, message) if code else None


def _outcome(code: int, message: str | None) -> int | KafkaError:
    """An item's answer for the per-item loop: a code to retry or 0 as it is, an error with the
    broker's message otherwise."""
    return code if not code or code in RETRY_ITEM else error_for_code(code, message)


class ClusterAdminCalls:
    """Mixed into AsyncAdmin, which provides the call loops and the routing helpers."""

    net: NetworkClient
    config: dict[str, Any]
    _per_item: PerItem
    _once: Callable[[str, float | None, Callable[[float], Awaitable[Any]]], Awaitable[Any]]
    _controller: Callable[[float], Awaitable[int]]
    _coordinator: Callable[[str, float], Awaitable[int]]
    _timeout_ms: Callable[[float], int]

    # -- partitions ---------------------------------------------------------------------------
    async def elect_leaders(self, partitions: list[TopicPartition] | None, election_type: int = PREFERRED, *,
                            timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """ElectLeaders for these partitions (None: all; the answer then names only those that
        needed an election); ELECTION_NOT_NEEDED comes back as that error, as Java's does."""
        named = list(partitions) if partitions is not None else None
        deadline = api_deadline(self.config, timeout)

        async def send(request_timeout: float) -> Any:
            topics: dict[str, list[int]] = {}
            for t, p in named or ():
                topics.setdefault(t, []).append(p)
            body = {"election_type": election_type, "timeout_ms": self._timeout_ms(deadline),
                    "topic_partitions": None if named is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.ELECT_LEADERS, body,
                                            timeout=request_timeout)
            if answer.get("error_code", 0):
                raise error_for_code(answer.error_code)
            return answer

        answer = await self._once("elect_leaders", timeout, send)
        return {(t.topic, p.partition_id): _error(p.error_code, p.error_message)
                for t in answer.replica_election_results for p in t.partition_result}

    async def alter_partition_reassignments(self, targets: Mapping[TopicPartition, list[int] | None], *,
                                            timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """Move partitions to these replicas (None cancels a reassignment under way)."""
        async def send(pending: list[TopicPartition], request_timeout: float, deadline: float) -> dict:
            topics: dict[str, list[dict]] = {}
            for t, p in pending:
                topics.setdefault(t, []).append({"partition_index": p, "replicas": targets[(t, p)]})
            body = {"timeout_ms": self._timeout_ms(deadline), "allow_replication_factor_change": True,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                                            body, timeout=request_timeout)
            if answer.error_code:
                return {tp: error_for_code(answer.error_code, answer.error_message) for tp in pending}
            return {(t.name, p.partition_index): _outcome(p.error_code, p.error_message)
                    for t in answer.responses for p in t.partitions}

        return await self._per_item("alter_partition_reassignments", targets, timeout, send)

    async def list_partition_reassignments(self, partitions: list[TopicPartition] | None = None, *,
                                           timeout: float | None = None) -> dict[TopicPartition, dict[str, list[int]]]:
        """The reassignments under way: per partition its replicas, adding and removing ones."""
        async def send(request_timeout: float) -> Any:
            topics: dict[str, list[int]] = {}
            for t, p in partitions or ():
                topics.setdefault(t, []).append(p)
            body = {"timeout_ms": int(request_timeout * 1000), "topics": None if partitions is None else
                    [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
            answer = await self.net.request(await self._controller(request_timeout), ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                            body, timeout=request_timeout)
            if answer.error_code:
                raise error_for_code(answer.error_code, answer.error_message)
            return answer

        answer = await self._once("list_partition_reassignments", timeout, send)
        return {(t.name, p.partition_index): {"replicas": list(p.replicas), "adding": list(p.adding_replicas),
                                              "removing": list(p.removing_replicas)}
                for t in answer.topics for p in t.partitions}

    async def describe_log_dirs(self, brokers: list[int], *,
                                timeout: float | None = None) -> dict[int, dict[str, dict[TopicPartition, int]] | KafkaError]:
        """Each broker's log directories: per directory, each replica's size in bytes."""
        sizes: dict[int, dict[str, dict[TopicPartition, int]]] = {}

        async def send(pending: list[int], request_timeout: float, deadline: float) -> dict:
            out: dict[Any, int | KafkaError] = {}
            await self._controller(request_timeout)   # learns every broker's address
            for broker in pending:
                answer = await self.net.request(broker, ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}, timeout=request_timeout)
                out[broker] = answer.get("error_code", 0)
                sizes[broker] = {d.log_dir: {(t.name, p.partition_index): p.partition_size
                                             for t in d.topics for p in t.partitions} for d in answer.results}
            return out

        errors = await self._per_item("describe_log_dirs", brokers, timeout, send)
        return {b: (err if err is not None else sizes[b]) for b, err in errors.items()}

    # -- groups ---------------------------------------------------------------------------------
    async def delete_group_offsets(self, group: str, partitions: list[TopicPartition], *,
                                   timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """OffsetDelete at the group's coordinator (a group error fails every partition)."""
        async def send(pending: list[TopicPartition], request_timeout: float, deadline: float) -> dict:
            topics: dict[str, list[dict]] = {}
            for t, p in pending:
                topics.setdefault(t, []).append({"partition_index": p})
            body = {"group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            answer = await self.net.request(await self._coordinator(group, request_timeout), ApiKey.OFFSET_DELETE, body,
                                            timeout=request_timeout)
            if answer.error_code:
                return {tp: answer.error_code for tp in pending}
            return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}

        return await self._per_item("delete_group_offsets", partitions, timeout, send)

    # -- client quotas --------------------------------------------------------------------------
    async def describe_client_quotas(self, components: list[Mapping[str, Any]], *, strict: bool = False,
                                     timeout: float | None = None) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """``components``: DescribeClientQuotas' (entity_type, match_type, match); the answer maps
        each entity (its (type, name) pairs) to its quotas."""
        async def send(request_timeout: float) -> Any:
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.DESCRIBE_CLIENT_QUOTAS,
                                            {"components": [dict(c) for c in components], "strict": strict},
                                            timeout=request_timeout)
            if answer.error_code:
                raise error_for_code(answer.error_code, answer.error_message)
            return answer

        answer = await self._once("describe_client_quotas", timeout, send)
        return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry["values"]}
                for entry in answer.entries or ()}

    async def alter_client_quotas(self, changes: Mapping[tuple[tuple[str, str | None], ...], Mapping[str, float | None]], *,
                                  validate_only: bool = False, timeout: float | None = None) -> dict[Any, KafkaError | None]:
        """``{(("client-id", "app"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": None}}``:
        a value sets the quota, None removes it."""
        async def send(pending: list[Any], request_timeout: float, deadline: float) -> dict:
            entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in changes[entity].items()]}
                       for entity in pending]
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.ALTER_CLIENT_QUOTAS,
                                            {"entries": entries, "validate_only": validate_only}, timeout=request_timeout)
            return {tuple((e.entity_type, e.entity_name) for e in r.entity): _outcome(r.error_code, r.error_message)
                    for r in answer.entries}

        return await self._per_item("alter_client_quotas", changes, timeout, send)

    # -- SCRAM credentials (KIP-554) -------------------------------------------------------------
    async def describe_user_scram_credentials(self, users: list[str] | None = None, *,
                                              timeout: float | None = None) -> dict[str, dict[str, int] | KafkaError]:
        """Each user's mechanisms and their iteration counts (never the secrets)."""
        names = {v: k for k, v in SCRAM_TYPES.items()}

        async def send(request_timeout: float) -> Any:
            body = {"users": None if users is None else [{"name": u} for u in users]}
            answer = await self.net.request(self.net.least_loaded_node(), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body,
                                            timeout=request_timeout)
            if answer.error_code:
                raise error_for_code(answer.error_code, answer.error_message)
            return answer

        answer = await self._once("describe_user_scram_credentials", timeout, send)
        return {r.user: _error(r.error_code, r.error_message) or
                {names.get(c.mechanism, str(c.mechanism)): c.iterations for c in r.credential_infos}
                for r in answer.results}

    async def alter_user_scram_credentials(self, upsert: Mapping[tuple[str, str], tuple[str, int]] | None = None,
                                           delete: Iterable[tuple[str, str]] = (), *,
                                           timeout: float | None = None) -> dict[str, KafkaError | None]:
        """``upsert``: {(user, "SCRAM-SHA-256"): (password, iterations)} — the salted password is
        made here (RFC 5802's Hi), as Java's ScramFormatter does, so the password never travels;
        ``delete``: (user, mechanism) pairs."""
        upsertions = []
        for (user, mechanism), (password, iterations) in (upsert or {}).items():
            kind, salt = SCRAM_TYPES[mechanism], os.urandom(32)
            salted = hashlib.pbkdf2_hmac(SCRAM_HASHES[kind], password.encode(), salt, iterations)
            upsertions.append({"name": user, "mechanism": kind, "iterations": iterations, "salt": salt,
                               "salted_password": salted})
        deletions = [{"name": u, "mechanism": SCRAM_TYPES[m]} for u, m in delete]

        async def send(request_timeout: float) -> Any:
            return await self.net.request(await self._controller(request_timeout), ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                                          {"deletions": deletions, "upsertions": upsertions}, timeout=request_timeout)

        answer = await self._once("alter_user_scram_credentials", timeout, send)
        return {r.user: _error(r.error_code, r.error_message) for r in answer.results}

