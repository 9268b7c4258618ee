"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from broker_emu.security.tls import ANONYMOUS, principal_of
from client.protocol import ApiKey

if TYPE_CHECKING:
    from broker_emu.brokers import Broker
    from broker_emu.cluster import Cluster


@dataclass(slots=True)
class RequestContext:
    cluster: "Cluster"
    broker: "Broker"
    conn_id: int
    client_addr: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection: Any = None
    repeat: bytes | None = None   # the request's repeat key (broker_emu.repeated_requests), if it may repeat
    lock_late_ms: float = 0.0     # a lock_late fault: the share locks this request takes expire so much late

    @property
    def broker_id(self) -> int:
        return self.broker.id

    @property
    def principal(self) -> str:
        """``User:<name>`` once SASL authenticated the connection; on an SSL listener the client
        certificate's subject (mutual TLS); else ``User:ANONYMOUS``."""
        sasl = getattr(self.connection, "sasl", None)
        if sasl is not None:
            return sasl.principal
        stream = getattr(self.connection, "stream", None)
        if isinstance(stream, trio.SSLStream):   # its handshake is done: a request came through it
            return principal_of(stream.getpeercert(binary_form=True))
        return ANONYMOUS

    def port_of(self, broker: Any) -> int:
        """``broker``'s port on the listener this request came in on: Kafka answers Metadata,
        FindCoordinator, DescribeCluster and KIP-951's node endpoints with that listener's."""
        protocol = getattr(self.connection, "protocol", None)
        return getattr(broker, "listeners", {}).get(protocol, broker.port)

    @property
    def client_host(self) -> str:
        return self.client_addr.rsplit(":", 1)[0]

    def trace_fields(self) -> dict[str, Any]:
        return {"broker": self.broker.id, "conn": self.conn_id, "client_id": self.client_id,
                "client_addr": self.client_addr, "correlation_id": self.correlation_id,
                "api_key": self.api_key, "api": API_NAMES.get(self.api_key), "api_version": self.api_version}


# one shared string per API for every trace event (this runs on every request)
API_NAMES = {int(k): k.api_name for k in ApiKey}
