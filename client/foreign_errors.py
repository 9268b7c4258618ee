"""What other clients' own error names mean here: librdkafka's client-local codes (negative,
never on the wire) and kafkajs's error classes, each mapped to the ``client.errors`` class of the
same outcome. Conformance adapters use them to name what a third-party client reported."""

from __future__ import annotations

from client.errors import KafkaError, NetworkException, TimeoutException

LIBRDKAFKA_LOCAL_ERRORS: dict[int, tuple[str, type[KafkaError]]] = {
    -185: ("_TIMED_OUT", TimeoutException),        # a request exceeded socket.timeout.ms
    -192: ("_MSG_TIMED_OUT", TimeoutException),    # message.timeout.ms / delivery.timeout.ms expired
    -166: ("_TIMED_OUT_QUEUE", TimeoutException),  # timed out before being sent
    -195: ("_TRANSPORT", NetworkException),        # connection failure
    -187: ("_ALL_BROKERS_DOWN", NetworkException),
}

# kafkajs's names for the same outcomes
KAFKAJS_ERRORS: dict[str, type[KafkaError]] = {
    "KafkaJSRequestTimeoutError": TimeoutException,  # client request timeout; connection stays open
    "KafkaJSNumberOfRetriesExceeded": KafkaError,    # wraps the last retriable cause
}
