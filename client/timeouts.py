"""Client-side timeout and disconnect errors that explain themselves: what timed out, on which
side, after how long, and which setting governs it (the seed note's complaint about Kafka's
"The server disconnected before a response was received")."""

from __future__ import annotations

from client.errors import DisconnectException, TimeoutException


class RequestTimeoutError(TimeoutException):
    """The client gave up on a request at its request timeout and closed the connection."""

    def __init__(self, api: str, correlation_id: int, broker: int, address: str, elapsed_ms: float,
                 setting: str = "request.timeout.ms"):
        self.side, self.api, self.correlation_id = "client", api, correlation_id
        self.broker, self.address, self.elapsed_ms, self.setting = broker, address, elapsed_ms, setting
        super().__init__(
            f"{api} (correlation id {correlation_id}) to broker {broker} at {address} got no answer within "
            f"{setting}={elapsed_ms:.0f} ms: client-side timeout; the client closed the connection and will "
            f"refresh metadata before retrying (KIP-19)")


class ConnectionClosedError(DisconnectException):
    """A request failed because its connection went away (ours or the broker's doing)."""

    def __init__(self, api: str, correlation_id: int, broker: int, address: str, why: str):
        self.api, self.correlation_id, self.broker, self.address, self.why = api, correlation_id, broker, address, why
        super().__init__(f"{api} (correlation id {correlation_id}) to broker {broker} at {address} failed: {why}")


class ConnectTimeoutError(TimeoutException):
    def __init__(self, broker: int, address: str, elapsed_ms: float):
        self.side, self.broker, self.address, self.elapsed_ms = "client", broker, address, elapsed_ms
        super().__init__(f"connecting to broker {broker} at {address} took longer than "
                         f"socket.connection.setup.timeout.ms={elapsed_ms:.0f} ms (client-side timeout)")
