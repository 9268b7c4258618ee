"""The group coordinator, seen from the client: where it is, and one attempt of each offset call.

Shared by the application's offset calls (``committed``, ``commit_sync``) and the group
membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, commits as a member), so all of them
learn and forget the coordinator together. It is found with FindCoordinator (sent to the
least-loaded broker) when first needed, and forgotten after a disconnect or request timeout on a
request to it and after a coordinator error code (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS: it moved or is loading), so the next request finds it again, as
Java's ``AbstractCoordinator.markCoordinatorUnknown``. No retries here: callers retry
(attempt-then-check, or the membership's backoff).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client.consumer import requests
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError, error_for_code
from client.network import NetworkClient
from client.protocol import ApiKey

COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.NOT_COORDINATOR})


COORDINATOR_NODE_BASE = 2**31 - 1


class CoordinatorClient:
    def __init__(self, net: NetworkClient, group: str, request_timeout: float, require_stable: bool = False):
        self.net, self.group, self.request_timeout = net, group, request_timeout
        self.require_stable = require_stable   # a read_committed consumer's OffsetFetch (KIP-447)
        self.node: int | None = None      # the coordinator, while known
        self.last: int | None = None      # the one the latest request went to (for error messages)

    # -- where it is -----------------------------------------------------------------------
    async def find(self, timeout: float) -> int:
        answer = await self.net.request(self.net.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                        requests.find_coordinator(self.group), timeout=timeout)
        entry = requests.coordinator_entry(answer)
        if entry.error_code:
            raise error_for_code(entry.error_code)
        # its own connection, as Java's AbstractCoordinator (node Integer.MAX_VALUE - id): heartbeats
        # and commits never queue behind a long-polling Fetch to the same broker
        alias = COORDINATOR_NODE_BASE - entry.node_id
        self.net.nodes[entry.node_id] = self.net.nodes[alias] = (entry.host, entry.port)
        self.net.aliases[alias] = entry.node_id
        self.node = entry.node_id
        return entry.node_id

    async def resolve(self, timeout: float) -> int:
        """The coordinator, found first (within ``timeout``) if not known."""
        return self.node if self.node is not None else await self.find(timeout)

    def forget(self) -> None:
        self.node = None

    def note_error(self, code: int | None) -> None:
        """An error code in an answer from the coordinator: forget it if it moved."""
        if code in COORDINATOR_ERRORS:
            self.forget()

    async def request(self, api_key: int, body: Any, timeout: float | None = None) -> Any:
        """One request to the coordinator (found first if needed, within ``timeout`` or
        request.timeout.ms); ``timeout`` None: the network client's default for the API (for
        JoinGroup, the rebalance timeout + 5 s)."""
        node = await self.resolve(self.request_timeout if timeout is None else timeout)
        self.last = node
        try:
            return await self.net.request(COORDINATOR_NODE_BASE - node, api_key, body, timeout=timeout)
        except KafkaError:
            self.forget()
            raise

    # -- one attempt of each offset call ---------------------------------------------------
    async def commit(self, offsets: Mapping[TopicPartition, int], timeout: float, generation: int = -1,
                     member_id: str = "", instance_id: str | None = None) -> int:
        """One OffsetCommit; returns the first partition error code (0: all committed)."""
        body = requests.offset_commit(self.group, offsets, generation, member_id, instance_id)
        code = requests.offset_commit_error(await self.request(ApiKey.OFFSET_COMMIT, body, timeout))
        self.note_error(code)
        return code

    async def committed(self, tps: list[TopicPartition], timeout: float) -> dict[TopicPartition, int | None]:
        """One OffsetFetch: the committed offset of each partition (None: nothing committed)."""
        body = requests.offset_fetch(self.group, tps, require_stable=self.require_stable)
        answer = await self.request(ApiKey.OFFSET_FETCH, body, timeout)
        error, offsets = requests.offset_fetch_result(answer)
        self.note_error(error)
        if error:
            raise error_for_code(error)
        return offsets
