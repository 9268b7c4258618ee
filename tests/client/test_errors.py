"""Kafka's error table: every code of Kafka's table (below, as test data) maps to a class named
after Kafka's name, with the right retriability; unknown codes become UnknownServerError; the
client-local family."""

import pytest

from client import errors as E

# (code, Kafka name, retriable), typed in from apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99:
# numbers and names from clients/src/main/java/org/apache/kafka/common/protocol/Errors.java, retriable when
# the exception class (clients/src/main/java/org/apache/kafka/common/errors/) extends RetriableException.
# The codes broker-emu and its client use; code 0 NONE is not an error.
TABLE = [
    (-1, "UNKNOWN_SERVER_ERROR", False), (1, "OFFSET_OUT_OF_RANGE", False), (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True), (5, "LEADER_NOT_AVAILABLE", True),
    (6, "NOT_LEADER_OR_FOLLOWER", True), (7, "REQUEST_TIMED_OUT", True), (8, "BROKER_NOT_AVAILABLE", False),
    (9, "REPLICA_NOT_AVAILABLE", True), (10, "MESSAGE_TOO_LARGE", False),
    (12, "OFFSET_METADATA_TOO_LARGE", False), (13, "NETWORK_EXCEPTION", True),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", True), (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True), (17, "INVALID_TOPIC_EXCEPTION", False),
    (18, "RECORD_LIST_TOO_LARGE", False), (19, "NOT_ENOUGH_REPLICAS", True),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True), (21, "INVALID_REQUIRED_ACKS", False),
    (22, "ILLEGAL_GENERATION", False), (23, "INCONSISTENT_GROUP_PROTOCOL", False),
    (24, "INVALID_GROUP_ID", False), (25, "UNKNOWN_MEMBER_ID", False), (26, "INVALID_SESSION_TIMEOUT", False),
    (27, "REBALANCE_IN_PROGRESS", False), (28, "INVALID_COMMIT_OFFSET_SIZE", False),
    (29, "TOPIC_AUTHORIZATION_FAILED", False), (30, "GROUP_AUTHORIZATION_FAILED", False),
    (31, "CLUSTER_AUTHORIZATION_FAILED", False), (32, "INVALID_TIMESTAMP", False),
    (33, "UNSUPPORTED_SASL_MECHANISM", False), (34, "ILLEGAL_SASL_STATE", False),
    (35, "UNSUPPORTED_VERSION", False), (36, "TOPIC_ALREADY_EXISTS", False),
    (37, "INVALID_PARTITIONS", False), (38, "INVALID_REPLICATION_FACTOR", False), (39, "INVALID_REPLICA_ASSIGNMENT", False),
    (40, "INVALID_CONFIG", False), (41, "NOT_CONTROLLER", True), (42, "INVALID_REQUEST", False),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False), (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
    (46, "DUPLICATE_SEQUENCE_NUMBER", False), (47, "INVALID_PRODUCER_EPOCH", False),
    (49, "INVALID_PRODUCER_ID_MAPPING", False), (51, "CONCURRENT_TRANSACTIONS", True),
    (54, "SECURITY_DISABLED", False), (56, "KAFKA_STORAGE_ERROR", True), (58, "SASL_AUTHENTICATION_FAILED", False),
    (59, "UNKNOWN_PRODUCER_ID", False), (70, "FETCH_SESSION_ID_NOT_FOUND", True),
    (71, "INVALID_FETCH_SESSION_EPOCH", True), (74, "FENCED_LEADER_EPOCH", True),
    (75, "UNKNOWN_LEADER_EPOCH", True), (76, "UNSUPPORTED_COMPRESSION_TYPE", False),
    (78, "OFFSET_NOT_AVAILABLE", True), (79, "MEMBER_ID_REQUIRED", False),
    (81, "GROUP_MAX_SIZE_REACHED", False), (82, "FENCED_INSTANCE_ID", False), (87, "INVALID_RECORD", False),
    (89, "THROTTLING_QUOTA_EXCEEDED", True), (90, "PRODUCER_FENCED", False), (91, "RESOURCE_NOT_FOUND", False),
    (92, "DUPLICATE_RESOURCE", False), (93, "UNACCEPTABLE_CREDENTIAL", False), (100, "UNKNOWN_TOPIC_ID", True),
    (110, "FENCED_MEMBER_EPOCH", False), (113, "STALE_MEMBER_EPOCH", False),
    (111, "UNRELEASED_INSTANCE_ID", False), (68, "NON_EMPTY_GROUP", False), (80, "PREFERRED_LEADER_NOT_AVAILABLE", True),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True), (84, "ELECTION_NOT_NEEDED", True), (85, "NO_REASSIGNMENT_IN_PROGRESS", False), (86, "GROUP_SUBSCRIBED_TO_TOPIC", False), (112, "UNSUPPORTED_ASSIGNOR", False), (128, "INVALID_REGULAR_EXPRESSION", False),
    (129, "REBOOTSTRAP_REQUIRED", False),
    (114, "MISMATCHED_ENDPOINT_TYPE", False), (115, "UNSUPPORTED_ENDPOINT_TYPE", False),
    # transactions (Errors: InvalidTxnStateException ... TransactionAbortableException)
    (48, "INVALID_TXN_STATE", False), (50, "INVALID_TRANSACTION_TIMEOUT", False), (52, "TRANSACTION_COORDINATOR_FENCED", False),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False), (55, "OPERATION_NOT_ATTEMPTED", False),
    (88, "UNSTABLE_OFFSET_COMMIT", True), (105, "TRANSACTIONAL_ID_NOT_FOUND", False), (120, "TRANSACTION_ABORTABLE", False),
    # the group coordinator's (Java: GroupIdNotFoundException, an ApiException)
    (69, "GROUP_ID_NOT_FOUND", False),
    # share groups (Errors: InvalidRecordStateException, an ApiException; the two share session
    # exceptions are RetriableException)
    (121, "INVALID_RECORD_STATE", False), (122, "SHARE_SESSION_NOT_FOUND", True), (123, "INVALID_SHARE_SESSION_EPOCH", True),
]

# the two codes whose classes keep Java's exception names
JAVA_NAMES = {17: "InvalidTopicException", 13: "NetworkException"}


@pytest.mark.parametrize("code, name, retriable", TABLE)
def test_code_maps_to_kafka_named_class(code, name, retriable):
    err = E.error_for_code(code, "why")
    camel = "".join(p.capitalize() for p in name.split("_"))
    mechanical = camel if name.endswith("_ERROR") else camel + "Error"  # UNKNOWN_SERVER_ERROR -> UnknownServerError
    assert type(err).__name__ == JAVA_NAMES.get(code, mechanical)
    assert getattr(E, mechanical) is type(err)  # the mechanical name always works
    assert (err.code, err.name, err.retriable, err.message, str(err)) == (code, name, retriable, "why", "why")
    assert isinstance(err, E.RetriableError) is retriable and isinstance(err, E.KafkaError)
    assert E.ErrorCode[name] == code and E.error_name(code) == name


def test_the_enum_and_the_class_table_are_exactly_the_codes_above():
    assert {m.value for m in E.ErrorCode} == {c for c, _, _ in TABLE} | {0}
    assert set(E.ERROR_CLASSES) == {c for c, _, _ in TABLE}
    assert all(cls.code == code for code, cls in E.ERROR_CLASSES.items())


def test_the_table_has_one_row_per_code_and_per_name():
    assert len({c for c, _, _ in TABLE}) == len({n for _, n, _ in TABLE}) == len(TABLE)


def test_each_code_has_the_class_that_declares_it():
    # DisconnectException is a NetworkException but never stands for code 13 on the wire
    assert E.ERROR_CLASSES[13] is E.NetworkException
    assert E.DisconnectException not in E.ERROR_CLASSES.values()
    assert all("code" in vars(cls) for cls in E.ERROR_CLASSES.values())


def test_default_message_names_the_error():
    assert str(E.NotLeaderOrFollowerError()) == "NOT_LEADER_OR_FOLLOWER (error code 6)"
    assert E.error_for_code(7).message == "REQUEST_TIMED_OUT (error code 7)"


def test_unknown_code_keeps_the_raw_code():
    err = E.error_for_code(9999)
    assert type(err) is E.UnknownServerError and err.code == 9999 and "9999" in str(err)
    assert E.UnknownServerError.code == -1  # the class is untouched
    assert E.error_name(9999) == "UNKNOWN_ERROR_CODE_9999"


def test_code_zero_is_not_an_error():
    with pytest.raises(ValueError, match="NONE"):
        E.error_for_code(0)


def test_client_side_families():
    assert issubclass(E.TimeoutException, E.RetriableError) and E.TimeoutException("x").retriable
    assert E.TimeoutException("x").code is None
    assert issubclass(E.DisconnectException, E.NetworkException) and E.DisconnectException("x").retriable
    assert E.RetriableException is E.RetriableError and E.KafkaException is E.KafkaError
