"""Kafka's error codes, one exception class per code, named after Kafka's names.

Written by hand from the Java client's error table (``org.apache.kafka.common.protocol.Errors``,
which tests/test_errors.py holds as test data): ``ErrorCode`` is the IntEnum of wire codes
(``ErrorCode.REQUEST_TIMED_OUT == 7``), and each code has a class named CamelCase + ``Error`` (``NOT_LEADER_OR_FOLLOWER`` ->
``NotLeaderOrFollowerError``) carrying ``code``, ``name``, ``retriable`` (the Java client's
classification: the class extends RetriableException) and ``message``. The two codes whose
names already end in EXCEPTION keep Java's class names (``InvalidTopicException``,
``NetworkException``; the mechanical names are aliases). ``error_for_code(code, message)``
returns an instance; unknown codes become ``UnknownServerError`` carrying the raw code.

Client-local failures (never on the wire) use Java's names: ``TimeoutException`` (retriable)
and ``DisconnectException`` (a ``NetworkException``); ``client/foreign_errors.py`` says which
of them another client's local error means.
"""
from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    TRANSACTION_ABORTABLE = 120
    INVALID_REGULAR_EXPRESSION = 128


class KafkaError(Exception):
    """Base of every Kafka error. ``code`` is the wire code (None for client-local errors)."""

    code: int | None = None
    name: str = "KAFKA_ERROR"
    retriable: bool = False

    def __init__(self, message: str | None = None, *, code: int | None = None):
        if code is not None:
            self.code = code
        self.message = message or self.default_message()
        super().__init__(self.message)

    def default_message(self) -> str:
        return f"{self.name} (error code {self.code})" if self.code is not None else self.name


class RetriableError(KafkaError):
    retriable = True

class UnknownServerError(KafkaError):
    code = -1
    name = 'UNKNOWN_SERVER_ERROR'

class OffsetOutOfRangeError(KafkaError):
    code = 1
    name = 'OFFSET_OUT_OF_RANGE'

class CorruptMessageError(RetriableError):
    code = 2
    name = 'CORRUPT_MESSAGE'

class UnknownTopicOrPartitionError(RetriableError):
    code = 3
    name = 'UNKNOWN_TOPIC_OR_PARTITION'

class LeaderNotAvailableError(RetriableError):
    code = 5
    name = 'LEADER_NOT_AVAILABLE'

class NotLeaderOrFollowerError(RetriableError):
    code = 6
    name = 'NOT_LEADER_OR_FOLLOWER'

class RequestTimedOutError(RetriableError):
    code = 7
    name = 'REQUEST_TIMED_OUT'

class BrokerNotAvailableError(KafkaError):
    code = 8
    name = 'BROKER_NOT_AVAILABLE'

class ReplicaNotAvailableError(RetriableError):
    code = 9
    name = 'REPLICA_NOT_AVAILABLE'

class MessageTooLargeError(KafkaError):
    code = 10
    name = 'MESSAGE_TOO_LARGE'

class OffsetMetadataTooLargeError(KafkaError):
    code = 12
    name = 'OFFSET_METADATA_TOO_LARGE'

class NetworkException(RetriableError):
    """The connection broke before a response arrived."""

    code = 13
    name = 'NETWORK_EXCEPTION'

class CoordinatorLoadInProgressError(RetriableError):
    code = 14
    name = 'COORDINATOR_LOAD_IN_PROGRESS'

class CoordinatorNotAvailableError(RetriableError):
    code = 15
    name = 'COORDINATOR_NOT_AVAILABLE'

class NotCoordinatorError(RetriableError):
    code = 16
    name = 'NOT_COORDINATOR'

class InvalidTopicException(KafkaError):
    code = 17
    name = 'INVALID_TOPIC_EXCEPTION'

class RecordListTooLargeError(KafkaError):
    code = 18
    name = 'RECORD_LIST_TOO_LARGE'

class NotEnoughReplicasError(RetriableError):
    code = 19
    name = 'NOT_ENOUGH_REPLICAS'

class NotEnoughReplicasAfterAppendError(RetriableError):
    code = 20
    name = 'NOT_ENOUGH_REPLICAS_AFTER_APPEND'

class InvalidRequiredAcksError(KafkaError):
    code = 21
    name = 'INVALID_REQUIRED_ACKS'

class IllegalGenerationError(KafkaError):
    code = 22
    name = 'ILLEGAL_GENERATION'

class InconsistentGroupProtocolError(KafkaError):
    code = 23
    name = 'INCONSISTENT_GROUP_PROTOCOL'

class InvalidGroupIdError(KafkaError):
    code = 24
    name = 'INVALID_GROUP_ID'

class UnknownMemberIdError(KafkaError):
    code = 25
    name = 'UNKNOWN_MEMBER_ID'

class InvalidSessionTimeoutError(KafkaError):
    code = 26
    name = 'INVALID_SESSION_TIMEOUT'

class RebalanceInProgressError(KafkaError):
    code = 27
    name = 'REBALANCE_IN_PROGRESS'

class InvalidCommitOffsetSizeError(KafkaError):
    code = 28
    name = 'INVALID_COMMIT_OFFSET_SIZE'

class TopicAuthorizationFailedError(KafkaError):
    code = 29
    name = 'TOPIC_AUTHORIZATION_FAILED'

class GroupAuthorizationFailedError(KafkaError):
    code = 30
    name = 'GROUP_AUTHORIZATION_FAILED'

class ClusterAuthorizationFailedError(KafkaError):
    code = 31
    name = 'CLUSTER_AUTHORIZATION_FAILED'

class InvalidTimestampError(KafkaError):
    code = 32
    name = 'INVALID_TIMESTAMP'

class UnsupportedSaslMechanismError(KafkaError):
    code = 33
    name = 'UNSUPPORTED_SASL_MECHANISM'

class IllegalSaslStateError(KafkaError):
    code = 34
    name = 'ILLEGAL_SASL_STATE'

class UnsupportedVersionError(KafkaError):
    code = 35
    name = 'UNSUPPORTED_VERSION'

class TopicAlreadyExistsError(KafkaError):
    code = 36
    name = 'TOPIC_ALREADY_EXISTS'

class InvalidPartitionsError(KafkaError):
    code = 37
    name = 'INVALID_PARTITIONS'

class InvalidReplicationFactorError(KafkaError):
    code = 38
    name = 'INVALID_REPLICATION_FACTOR'

class InvalidReplicaAssignmentError(KafkaError):
    code = 39
    name = 'INVALID_REPLICA_ASSIGNMENT'

class InvalidConfigError(KafkaError):
    code = 40
    name = 'INVALID_CONFIG'

class NotControllerError(RetriableError):
    code = 41
    name = 'NOT_CONTROLLER'

class InvalidRequestError(KafkaError):
    code = 42
    name = 'INVALID_REQUEST'

class UnsupportedForMessageFormatError(KafkaError):
    code = 43
    name = 'UNSUPPORTED_FOR_MESSAGE_FORMAT'

class OutOfOrderSequenceNumberError(KafkaError):
    code = 45
    name = 'OUT_OF_ORDER_SEQUENCE_NUMBER'

class DuplicateSequenceNumberError(KafkaError):
    code = 46
    name = 'DUPLICATE_SEQUENCE_NUMBER'

class InvalidProducerEpochError(KafkaError):
    code = 47
    name = 'INVALID_PRODUCER_EPOCH'

class InvalidTxnStateError(KafkaError):
    code = 48
    name = 'INVALID_TXN_STATE'

class InvalidProducerIdMappingError(KafkaError):
    code = 49
    name = 'INVALID_PRODUCER_ID_MAPPING'

class InvalidTransactionTimeoutError(KafkaError):
    code = 50
    name = 'INVALID_TRANSACTION_TIMEOUT'

class ConcurrentTransactionsError(RetriableError):
    code = 51
    name = 'CONCURRENT_TRANSACTIONS'

class TransactionCoordinatorFencedError(KafkaError):
    code = 52
    name = 'TRANSACTION_COORDINATOR_FENCED'

class TransactionalIdAuthorizationFailedError(KafkaError):
    code = 53
    name = 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED'

class OperationNotAttemptedError(KafkaError):
    code = 55
    name = 'OPERATION_NOT_ATTEMPTED'

class KafkaStorageError(RetriableError):
    code = 56
    name = 'KAFKA_STORAGE_ERROR'

class SaslAuthenticationFailedError(KafkaError):
    code = 58
    name = 'SASL_AUTHENTICATION_FAILED'

class UnknownProducerIdError(KafkaError):
    code = 59
    name = 'UNKNOWN_PRODUCER_ID'

class GroupIdNotFoundError(KafkaError):
    """The group does not exist (OffsetCommit v9+ to a group the coordinator does not know)."""

    code = 69
    name = 'GROUP_ID_NOT_FOUND'

class FetchSessionIdNotFoundError(RetriableError):
    code = 70
    name = 'FETCH_SESSION_ID_NOT_FOUND'

class InvalidFetchSessionEpochError(RetriableError):
    code = 71
    name = 'INVALID_FETCH_SESSION_EPOCH'

class FencedLeaderEpochError(RetriableError):
    code = 74
    name = 'FENCED_LEADER_EPOCH'

class UnknownLeaderEpochError(RetriableError):
    code = 75
    name = 'UNKNOWN_LEADER_EPOCH'

class UnsupportedCompressionTypeError(KafkaError):
    code = 76
    name = 'UNSUPPORTED_COMPRESSION_TYPE'

class OffsetNotAvailableError(RetriableError):
    code = 78
    name = 'OFFSET_NOT_AVAILABLE'

class MemberIdRequiredError(KafkaError):
    code = 79
    name = 'MEMBER_ID_REQUIRED'

class GroupMaxSizeReachedError(KafkaError):
    code = 81
    name = 'GROUP_MAX_SIZE_REACHED'

class FencedInstanceIdError(KafkaError):
    code = 82
    name = 'FENCED_INSTANCE_ID'

class InvalidRecordError(KafkaError):
    code = 87
    name = 'INVALID_RECORD'

class UnstableOffsetCommitError(RetriableError):
    code = 88
    name = 'UNSTABLE_OFFSET_COMMIT'

class ThrottlingQuotaExceededError(RetriableError):
    code = 89
    name = 'THROTTLING_QUOTA_EXCEEDED'

class ProducerFencedError(KafkaError):
    code = 90
    name = 'PRODUCER_FENCED'

class UnknownTopicIdError(RetriableError):
    code = 100
    name = 'UNKNOWN_TOPIC_ID'

class TransactionalIdNotFoundError(KafkaError):
    code = 105
    name = 'TRANSACTIONAL_ID_NOT_FOUND'

class FencedMemberEpochError(KafkaError):
    code = 110
    name = 'FENCED_MEMBER_EPOCH'

class UnreleasedInstanceIdError(KafkaError):
    code = 111
    name = 'UNRELEASED_INSTANCE_ID'

class UnsupportedAssignorError(KafkaError):
    code = 112
    name = 'UNSUPPORTED_ASSIGNOR'

class StaleMemberEpochError(KafkaError):
    code = 113
    name = 'STALE_MEMBER_EPOCH'

class MismatchedEndpointTypeError(KafkaError):
    code = 114
    name = 'MISMATCHED_ENDPOINT_TYPE'

class UnsupportedEndpointTypeError(KafkaError):
    code = 115
    name = 'UNSUPPORTED_ENDPOINT_TYPE'

class TransactionAbortableError(KafkaError):
    code = 120
    name = 'TRANSACTION_ABORTABLE'

class InvalidRegularExpressionError(KafkaError):
    code = 128
    name = 'INVALID_REGULAR_EXPRESSION'

# -- client-local errors (never on the wire; Java's TimeoutException, DisconnectException) -----

class TimeoutException(RetriableError):
    """A client-side deadline passed (request.timeout.ms, delivery.timeout.ms, max.block.ms, an
    API deadline: Java's ``org.apache.kafka.common.errors.TimeoutException``, retriable). The
    message says which side timed out, after how long, and which setting governs it."""

    name = "TIMEOUT"


class DisconnectException(NetworkException):
    """A request cancelled because its connection was closed (by us or by the broker). Java's
    DisconnectException extends RetriableException directly; here it is also a NetworkException
    so that one ``except NetworkException`` covers every lost-connection outcome."""

    name = "DISCONNECTED"


# Java's family names, for readers who know them
RetriableException = RetriableError
KafkaException = KafkaError


# Each wire code's class, collected from the classes above (those that set their own ``code``, so
# DisconnectException, a NetworkException, does not take code 13).
ERROR_CLASSES: dict[int, type[KafkaError]] = {
    cls.code: cls for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, KafkaError) and "code" in vars(cls) and cls.code is not None
}



def error_for_code(code: int, message: str | None = None) -> KafkaError:
    """The exception for a wire error code; unknown codes become UnknownServerError carrying the
    raw code. Code 0 (NONE) is not an error: asking for one is a bug in the caller."""
    if code == 0:
        raise ValueError("error code 0 is NONE: there is no error to raise")
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return UnknownServerError(message or f"unknown error code {code}", code=code)
    return cls(message)


def error_name(code: int) -> str:
    """Kafka's name for a wire code ("NOT_LEADER_OR_FOLLOWER"), or UNKNOWN_ERROR_CODE_<n>."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


# The mechanical names (CamelCase of Kafka's name + "Error") for the two codes whose classes keep
# Java's exception names, so ``getattr(errors, camel + "Error")`` works for every code.
InvalidTopicExceptionError = InvalidTopicException
NetworkExceptionError = NetworkException
