"""Kafka's error table: every code of ERRORS.md maps to a class named after Kafka's name, with
the right retriability; unknown codes become UnknownServerError."""

import pytest

from client import errors as E

# (code, Kafka name, retriable) for a representative spread, typed in from ERRORS.md
TABLE = [
    (-1, "UNKNOWN_SERVER_ERROR", False), (1, "OFFSET_OUT_OF_RANGE", False), (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True), (6, "NOT_LEADER_OR_FOLLOWER", True), (7, "REQUEST_TIMED_OUT", True),
    (10, "MESSAGE_TOO_LARGE", False), (13, "NETWORK_EXCEPTION", True), (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True), (19, "NOT_ENOUGH_REPLICAS", True), (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
    (22, "ILLEGAL_GENERATION", False), (25, "UNKNOWN_MEMBER_ID", False), (27, "REBALANCE_IN_PROGRESS", False),
    (35, "UNSUPPORTED_VERSION", False), (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False), (74, "FENCED_LEADER_EPOCH", True),
    (79, "MEMBER_ID_REQUIRED", False), (87, "INVALID_RECORD", False), (100, "UNKNOWN_TOPIC_ID", True),
    (113, "STALE_MEMBER_EPOCH", False),
]


@pytest.mark.parametrize("code, name, retriable", TABLE)
def test_code_maps_to_kafka_named_class(code, name, retriable):
    err = E.error_for_code(code)
    assert err.code == code and err.name == name and err.retriable is retriable
    camel = "".join(p.capitalize() for p in name.split("_"))
    assert type(err).__name__ in (camel + "Error", camel, "UnknownServerError")
    assert E.ErrorCode[name] == code


def test_not_leader_class_name_and_message():
    err = E.error_for_code(6, "leader moved to broker 2")
    assert isinstance(err, E.NotLeaderOrFollowerError) and isinstance(err, E.RetriableError)
    assert str(err) == "leader moved to broker 2"


def test_every_error_code_in_the_table_has_a_class():
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[2] / "shared" / "kafka-protocol" / "ERRORS.md"
    codes = {int(m.group(1)) for m in re.finditer(r"^\| *(-?\d+) *\| *[A-Z_]+ *\|", doc.read_text(), re.M)} if doc.exists() else set()
    codes.discard(0)
    assert codes <= set(E.ERROR_CLASSES)
    assert len(E.ERROR_CLASSES) >= 60


def test_unknown_code_keeps_the_raw_code():
    err = E.error_for_code(9999)
    assert isinstance(err, E.UnknownServerError) and err.code == 9999 and "9999" in str(err)


def test_client_side_families():
    assert issubclass(E.TimeoutException, E.RetriableError)
    assert issubclass(E.DisconnectException, E.NetworkException)
