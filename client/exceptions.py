"""Client-side failures that explain themselves.

The seed note's complaint: Kafka's "The server disconnected before a response was received"
says nothing about what, where or why. Every exception here says which side gave up (client or
broker), the API and correlation id, the broker id and address, how long it waited, and the
setting that governs the wait. The classes keep Kafka's family names (TimeoutException,
DisconnectException, NetworkException) so Kafka users recognise them; the wire errors
themselves (REQUEST_TIMED_OUT from the broker's purgatory, ...) are ``client.errors``.
"""

from __future__ import annotations

from client.errors import (
    DisconnectException,
    KafkaError,
    MessageTooLargeError,
    TimeoutException,
)


def _who(api: str, correlation_id: int, broker: int, address: str) -> str:
    return f"{api} (correlation id {correlation_id}) to broker {broker} at {address}"


class RequestTimeoutException(TimeoutException):
    """The client's own request timeout (KIP-19): no answer within the request's timeout, so the
    client closed the connection. Every other request in flight on that connection fails with
    this class too (``timed_out`` names the one that expired), as Java marks them timed out."""

    side = "client"

    def __init__(self, api: str, correlation_id: int, broker: int, address: str, elapsed_ms: float,
                 timeout_ms: float, setting: str = "request.timeout.ms", *, timed_out: str | None = None,
                 others: int = 0):
        self.api, self.correlation_id, self.broker, self.address = api, correlation_id, broker, address
        self.elapsed_ms, self.timeout_ms, self.setting, self.timed_out = elapsed_ms, timeout_ms, setting, timed_out
        who = _who(api, correlation_id, broker, address)
        if timed_out is None:
            text = (f"{who} got no response within {setting}={timeout_ms:.0f} ms (waited {elapsed_ms:.0f} ms): "
                    f"client-side request timeout; the client closed the connection"
                    + (f", failed the {others} other request(s) in flight on it" if others else "")
                    + " and will refresh metadata before retrying (KIP-19)")
        else:
            text = (f"{who} was failed after {elapsed_ms:.0f} ms: the client closed the connection because "
                    f"{timed_out} on it got no response within {setting}={timeout_ms:.0f} ms (client-side request timeout)")
        super().__init__(text)


class ConnectionSetupTimeoutException(TimeoutException):
    """Connecting (TCP, TLS) took longer than socket.connection.setup.timeout.ms, which grows
    per failed attempt up to socket.connection.setup.timeout.max.ms (KIP-601)."""

    side = "client"

    def __init__(self, broker: int, address: str, elapsed_ms: float, attempt: int):
        self.broker, self.address, self.elapsed_ms, self.attempt = broker, address, elapsed_ms, attempt
        self.setting = "socket.connection.setup.timeout.ms"
        super().__init__(
            f"connecting to broker {broker} at {address} took longer than the connection setup timeout "
            f"({elapsed_ms:.0f} ms, attempt {attempt}; socket.connection.setup.timeout.ms, growing per failed "
            f"attempt up to socket.connection.setup.timeout.max.ms): client-side timeout")


class ConnectionClosedError(DisconnectException):
    """A request failed because its connection went away before the answer: the broker closed
    it, the client is closing, or the byte stream broke. Retriable; the request may or may not
    have been processed by the broker."""

    def __init__(self, api: str, correlation_id: int, broker: int, address: str, why: str, *,
                 elapsed_ms: float | None = None, closed_by: str = "broker"):
        self.api, self.correlation_id, self.broker, self.address = api, correlation_id, broker, address
        self.why, self.elapsed_ms, self.closed_by = why, elapsed_ms, closed_by
        after = f" after {elapsed_ms:.0f} ms" if elapsed_ms is not None else ""
        super().__init__(f"{_who(api, correlation_id, broker, address)} failed{after}: {why} "
                         f"(no response; the broker may or may not have processed it)")


class ConnectionFailedError(DisconnectException):
    """Could not open a connection (refused, unreachable, TLS handshake failed)."""

    def __init__(self, broker: int, address: str, why: str, backoff_ms: int):
        self.broker, self.address, self.why, self.backoff_ms = broker, address, why, backoff_ms
        super().__init__(f"could not connect to broker {broker} at {address}: {why}; the next attempt waits "
                         f"{backoff_ms} ms (reconnect.backoff.ms, growing to reconnect.backoff.max.ms)")


class UnknownBrokerError(DisconnectException):
    """A request for a broker the client holds no address for: a rebootstrap forgot it, or the
    metadata stopped naming it, after the request was meant for it. Retriable, as a disconnect
    is: the request never left, and the caller's retry goes where the next metadata says (Java's
    Sender only drains batches for a node NetworkClient.ready, so such a batch stays queued)."""

    def __init__(self, broker: int, *, forgotten: bool = False):
        self.broker = broker
        why = "forgotten by a rebootstrap" if forgotten else "not in bootstrap.servers nor in the current metadata"
        super().__init__(f"broker {broker} is not known ({why}): the request was not sent")


class DeliveryTimeoutException(TimeoutException):
    """KIP-91: a batch's records were neither delivered nor failed within delivery.timeout.ms
    of the batch's creation, wherever the batch was (accumulator, retry backoff, in flight)."""

    side = "client"

    def __init__(self, topic: str, partition: int, records: int, elapsed_ms: float, delivery_timeout_ms: int,
                 attempts: int, where: str, last: str | None):
        self.topic, self.partition, self.records, self.elapsed_ms = topic, partition, records, elapsed_ms
        self.delivery_timeout_ms, self.attempts, self.where, self.last = delivery_timeout_ms, attempts, where, last
        self.setting = "delivery.timeout.ms"
        super().__init__(
            f"Expiring {records} record(s) for {topic}-{partition}: {elapsed_ms:.0f} ms has passed since batch "
            f"creation (delivery.timeout.ms={delivery_timeout_ms} ms, client-side delivery timeout); the batch was "
            f"{where} after {attempts} attempt(s)" + (f"; last attempt: {last}" if last else ""))


class MaxBlockTimeoutException(TimeoutException):
    """send() (or partitions_for) waited max.block.ms for metadata or buffer space; nothing was
    enqueued."""

    side = "client"

    def __init__(self, max_block_ms: int, waiting_for: str, last: str | None = None):
        self.max_block_ms, self.waiting_for, self.last = max_block_ms, waiting_for, last
        self.setting = "max.block.ms"
        super().__init__(f"send() blocked for max.block.ms={max_block_ms} ms waiting for {waiting_for} "
                         f"(client-side timeout; nothing was enqueued)" + (f"; last: {last}" if last else ""))


class RecordTooLargeException(MessageTooLargeError):
    """A record larger than max.request.size or buffer.memory (refused before it is enqueued)."""


class ProducerClosedError(KafkaError):
    name = "PRODUCER_CLOSED"


class CommitFailedException(KafkaError):
    """A commit the group refused because this member is no longer part of the generation it
    committed for (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS): the partitions
    may already belong to another member. Not retriable, as in Java: rejoin, then commit again."""

    name = "COMMIT_FAILED"


class WakeupException(KafkaError):
    """poll() interrupted by wakeup() from another task or thread (Java's WakeupException)."""

    name = "WAKEUP"


class NetworkThreadDied(KafkaError):
    """The blocking face's network thread is gone (closed or crashed): calls fail at once."""

    name = "NETWORK_THREAD_DIED"


def broker_request_timed_out_message(broker: int, address: str, topic: str, partition: int, timeout_ms: int) -> str:
    """REQUEST_TIMED_OUT in a Produce response: the broker's purgatory gave up, not the client."""
    return (f"broker {broker} at {address} answered REQUEST_TIMED_OUT for {topic}-{partition}: its purgatory waited "
            f"the request's timeout_ms={timeout_ms} ms (= request.timeout.ms) for the in-sync replicas (server-side "
            f"timeout; the records are in the leader's log and may still become committed)")
