"""Kafka's error codes, one exception class per code, named after Kafka's names.

Written by hand from the Java client's error table (``org.apache.kafka.common.protocol.Errors``,
which tests/client/test_errors.py holds as test data): ``ErrorCode`` is the IntEnum of wire codes
(``ErrorCode.REQUEST_TIMED_OUT == 7``), and each code has a class named CamelCase + ``Error`` (``NOT_LEADER_OR_FOLLOWER`` ->
``NotLeaderOrFollowerError``) carrying ``code``, ``name``, ``retriable`` (the Java client's
classification: the class extends RetriableException) and ``message``. The two codes whose
names already end in EXCEPTION keep Java's class names (``InvalidTopicException``,
``NetworkException``; the mechanical names are aliases). ``error_for_code(code, message)``
returns an instance; unknown codes become ``UnknownServerError`` carrying the raw code.

Client-local failures (never on the wire) use Java's names: ``TimeoutException`` (retriable)
and ``DisconnectException`` (a ``NetworkException``); each conformance adapter maps its client's
own local errors to these names.
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
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    UNKNOWN_TOPIC_ID = 100
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129


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
    code, name = -1, 'UNKNOWN_SERVER_ERROR'

class OffsetOutOfRangeError(KafkaError):
    code, name = 1, 'OFFSET_OUT_OF_RANGE'

class CorruptMessageError(RetriableError):
    code, name = 2, 'CORRUPT_MESSAGE'

class UnknownTopicOrPartitionError(RetriableError):
    code, name = 3, 'UNKNOWN_TOPIC_OR_PARTITION'

class LeaderNotAvailableError(RetriableError):
    code, name = 5, 'LEADER_NOT_AVAILABLE'

class NotLeaderOrFollowerError(RetriableError):
    code, name = 6, 'NOT_LEADER_OR_FOLLOWER'

class RequestTimedOutError(RetriableError):
    code, name = 7, 'REQUEST_TIMED_OUT'

class BrokerNotAvailableError(KafkaError):
    code, name = 8, 'BROKER_NOT_AVAILABLE'

class ReplicaNotAvailableError(RetriableError):
    code, name = 9, 'REPLICA_NOT_AVAILABLE'

class MessageTooLargeError(KafkaError):
    code, name = 10, 'MESSAGE_TOO_LARGE'

class OffsetMetadataTooLargeError(KafkaError):
    code, name = 12, 'OFFSET_METADATA_TOO_LARGE'

class NetworkException(RetriableError):
    """The connection broke before a response arrived."""

    code = 13
    name = 'NETWORK_EXCEPTION'

class CoordinatorLoadInProgressError(RetriableError):
    code, name = 14, 'COORDINATOR_LOAD_IN_PROGRESS'

class CoordinatorNotAvailableError(RetriableError):
    code, name = 15, 'COORDINATOR_NOT_AVAILABLE'

class NotCoordinatorError(RetriableError):
    code, name = 16, 'NOT_COORDINATOR'

class InvalidTopicException(KafkaError):
    code, name = 17, 'INVALID_TOPIC_EXCEPTION'

class RecordListTooLargeError(KafkaError):
    code, name = 18, 'RECORD_LIST_TOO_LARGE'

class NotEnoughReplicasError(RetriableError):
    code, name = 19, 'NOT_ENOUGH_REPLICAS'

class NotEnoughReplicasAfterAppendError(RetriableError):
    code, name = 20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND'

class InvalidRequiredAcksError(KafkaError):
    code, name = 21, 'INVALID_REQUIRED_ACKS'

class IllegalGenerationError(KafkaError):
    code, name = 22, 'ILLEGAL_GENERATION'

class InconsistentGroupProtocolError(KafkaError):
    code, name = 23, 'INCONSISTENT_GROUP_PROTOCOL'

class InvalidGroupIdError(KafkaError):
    code, name = 24, 'INVALID_GROUP_ID'

class UnknownMemberIdError(KafkaError):
    code, name = 25, 'UNKNOWN_MEMBER_ID'

class InvalidSessionTimeoutError(KafkaError):
    code, name = 26, 'INVALID_SESSION_TIMEOUT'

class RebalanceInProgressError(KafkaError):
    code, name = 27, 'REBALANCE_IN_PROGRESS'

class InvalidCommitOffsetSizeError(KafkaError):
    code, name = 28, 'INVALID_COMMIT_OFFSET_SIZE'

class TopicAuthorizationFailedError(KafkaError):
    code, name = 29, 'TOPIC_AUTHORIZATION_FAILED'

class GroupAuthorizationFailedError(KafkaError):
    code, name = 30, 'GROUP_AUTHORIZATION_FAILED'

class ClusterAuthorizationFailedError(KafkaError):
    code, name = 31, 'CLUSTER_AUTHORIZATION_FAILED'

class InvalidTimestampError(KafkaError):
    code, name = 32, 'INVALID_TIMESTAMP'

class UnsupportedSaslMechanismError(KafkaError):
    code, name = 33, 'UNSUPPORTED_SASL_MECHANISM'

class IllegalSaslStateError(KafkaError):
    code, name = 34, 'ILLEGAL_SASL_STATE'

class UnsupportedVersionError(KafkaError):
    code, name = 35, 'UNSUPPORTED_VERSION'

class TopicAlreadyExistsError(KafkaError):
    code, name = 36, 'TOPIC_ALREADY_EXISTS'

class InvalidPartitionsError(KafkaError):
    code, name = 37, 'INVALID_PARTITIONS'

class InvalidReplicationFactorError(KafkaError):
    code, name = 38, 'INVALID_REPLICATION_FACTOR'

class InvalidReplicaAssignmentError(KafkaError):
    code, name = 39, 'INVALID_REPLICA_ASSIGNMENT'

class InvalidConfigError(KafkaError):
    code, name = 40, 'INVALID_CONFIG'

class NotControllerError(RetriableError):
    code, name = 41, 'NOT_CONTROLLER'

class InvalidRequestError(KafkaError):
    code, name = 42, 'INVALID_REQUEST'

class UnsupportedForMessageFormatError(KafkaError):
    code, name = 43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT'

class OutOfOrderSequenceNumberError(KafkaError):
    code, name = 45, 'OUT_OF_ORDER_SEQUENCE_NUMBER'

class DuplicateSequenceNumberError(KafkaError):
    code, name = 46, 'DUPLICATE_SEQUENCE_NUMBER'

class InvalidProducerEpochError(KafkaError):
    code, name = 47, 'INVALID_PRODUCER_EPOCH'

class InvalidTxnStateError(KafkaError):
    code, name = 48, 'INVALID_TXN_STATE'

class InvalidProducerIdMappingError(KafkaError):
    code, name = 49, 'INVALID_PRODUCER_ID_MAPPING'

class InvalidTransactionTimeoutError(KafkaError):
    code, name = 50, 'INVALID_TRANSACTION_TIMEOUT'

class ConcurrentTransactionsError(RetriableError):
    code, name = 51, 'CONCURRENT_TRANSACTIONS'

class TransactionCoordinatorFencedError(KafkaError):
    code, name = 52, 'TRANSACTION_COORDINATOR_FENCED'

class TransactionalIdAuthorizationFailedError(KafkaError):
    code, name = 53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED'

class SecurityDisabledError(KafkaError):
    code, name = 54, 'SECURITY_DISABLED'

class ResourceNotFoundError(KafkaError):
    code, name = 91, 'RESOURCE_NOT_FOUND'

class DuplicateResourceError(KafkaError):
    code, name = 92, 'DUPLICATE_RESOURCE'

class UnacceptableCredentialError(KafkaError):
    code, name = 93, 'UNACCEPTABLE_CREDENTIAL'

class OperationNotAttemptedError(KafkaError):
    code, name = 55, 'OPERATION_NOT_ATTEMPTED'

class KafkaStorageError(RetriableError):
    code, name = 56, 'KAFKA_STORAGE_ERROR'

class SaslAuthenticationFailedError(KafkaError):
    code, name = 58, 'SASL_AUTHENTICATION_FAILED'

class UnknownProducerIdError(KafkaError):
    code, name = 59, 'UNKNOWN_PRODUCER_ID'

class GroupIdNotFoundError(KafkaError):
    """The group does not exist (OffsetCommit v9+ to a group the coordinator does not know)."""

    code = 69
    name = 'GROUP_ID_NOT_FOUND'

class NonEmptyGroupError(KafkaError):
    code, name = 68, 'NON_EMPTY_GROUP'

class FetchSessionIdNotFoundError(RetriableError):
    code, name = 70, 'FETCH_SESSION_ID_NOT_FOUND'

class InvalidFetchSessionEpochError(RetriableError):
    code, name = 71, 'INVALID_FETCH_SESSION_EPOCH'

class FencedLeaderEpochError(RetriableError):
    code, name = 74, 'FENCED_LEADER_EPOCH'

class UnknownLeaderEpochError(RetriableError):
    code, name = 75, 'UNKNOWN_LEADER_EPOCH'

class UnsupportedCompressionTypeError(KafkaError):
    code, name = 76, 'UNSUPPORTED_COMPRESSION_TYPE'

class OffsetNotAvailableError(RetriableError):
    code, name = 78, 'OFFSET_NOT_AVAILABLE'

class MemberIdRequiredError(KafkaError):
    code, name = 79, 'MEMBER_ID_REQUIRED'

class PreferredLeaderNotAvailableError(RetriableError):
    code, name = 80, 'PREFERRED_LEADER_NOT_AVAILABLE'

class GroupMaxSizeReachedError(KafkaError):
    code, name = 81, 'GROUP_MAX_SIZE_REACHED'

class FencedInstanceIdError(KafkaError):
    code, name = 82, 'FENCED_INSTANCE_ID'

class EligibleLeadersNotAvailableError(RetriableError):
    code, name = 83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE'

class ElectionNotNeededError(RetriableError):
    code, name = 84, 'ELECTION_NOT_NEEDED'

class NoReassignmentInProgressError(KafkaError):
    code, name = 85, 'NO_REASSIGNMENT_IN_PROGRESS'

class GroupSubscribedToTopicError(KafkaError):
    code, name = 86, 'GROUP_SUBSCRIBED_TO_TOPIC'

class InvalidRecordError(KafkaError):
    code, name = 87, 'INVALID_RECORD'

class UnstableOffsetCommitError(RetriableError):
    code, name = 88, 'UNSTABLE_OFFSET_COMMIT'

class ThrottlingQuotaExceededError(RetriableError):
    code, name = 89, 'THROTTLING_QUOTA_EXCEEDED'

class ProducerFencedError(KafkaError):
    code, name = 90, 'PRODUCER_FENCED'

class UnknownTopicIdError(RetriableError):
    code, name = 100, 'UNKNOWN_TOPIC_ID'

class TransactionalIdNotFoundError(KafkaError):
    code, name = 105, 'TRANSACTIONAL_ID_NOT_FOUND'

class FencedMemberEpochError(KafkaError):
    code, name = 110, 'FENCED_MEMBER_EPOCH'

class UnreleasedInstanceIdError(KafkaError):
    code, name = 111, 'UNRELEASED_INSTANCE_ID'

class UnsupportedAssignorError(KafkaError):
    code, name = 112, 'UNSUPPORTED_ASSIGNOR'

class StaleMemberEpochError(KafkaError):
    code, name = 113, 'STALE_MEMBER_EPOCH'

class MismatchedEndpointTypeError(KafkaError):
    code, name = 114, 'MISMATCHED_ENDPOINT_TYPE'

class UnsupportedEndpointTypeError(KafkaError):
    code, name = 115, 'UNSUPPORTED_ENDPOINT_TYPE'

class TransactionAbortableError(KafkaError):
    code, name = 120, 'TRANSACTION_ABORTABLE'

class InvalidRecordStateError(KafkaError):
    code, name = 121, 'INVALID_RECORD_STATE'

class ShareSessionNotFoundError(RetriableError):
    code, name = 122, 'SHARE_SESSION_NOT_FOUND'

class InvalidShareSessionEpochError(RetriableError):
    code, name = 123, 'INVALID_SHARE_SESSION_EPOCH'

class InvalidRegularExpressionError(KafkaError):
    code, name = 128, 'INVALID_REGULAR_EXPRESSION'

class RebootstrapRequiredError(KafkaError):
    """Metadata v13's top-level error (KIP-1102): the broker says the client's metadata is
    stale and it should go back to bootstrap.servers (Java's RebootstrapRequiredException, not
    retriable: the client acts on it in its metadata layer instead)."""

    code, name = 129, 'REBOOTSTRAP_REQUIRED'

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
