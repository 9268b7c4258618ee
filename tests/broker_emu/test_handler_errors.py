"""An exception that escapes a handler or an encoder is a bug, never a way to reject input:
it is traced as ``handler_error`` and the request gets Kafka's answer for it —
its own error response with UNKNOWN_SERVER_ERROR (KafkaApis.handle → handleError) — and the
connection lives on. tests/conftest.py fails any other test during which one happens."""

import dataclasses

import pytest

from broker_emu.registry import REGISTRY
from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.wire import WireClient

LIST_GROUPS, METADATA = 16, 3
pytestmark = pytest.mark.handler_errors_expected


def swap_handler(monkeypatch, api, fn):
    monkeypatch.setitem(REGISTRY, api, dataclasses.replace(REGISTRY[api], handler=fn))


async def test_a_handler_exception_is_answered_with_unknown_server_error_and_traced(monkeypatch, autojump_clock):
    async def broken(ctx, request):
        raise ZeroDivisionError("a bug")

    async with open_cluster(1, listen=False) as cluster:
        swap_handler(monkeypatch, ApiKey.LIST_GROUPS, broken)   # handlers register when a cluster starts
        wire = WireClient(cluster.connect(0))
        answer = await wire.call(LIST_GROUPS, 4, {"states_filter": []})
        assert answer["error_code"] == -1   # UNKNOWN_SERVER_ERROR
        md = await wire.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
        assert md["brokers"][0]["node_id"] == 0   # the same connection still serves
        errors = [e for e in cluster.trace.events if e.kind == "handler_error"]
        assert len(errors) == 1 and errors[0].api == "ListGroups" and errors[0].details["stage"] == "handler"
        assert errors[0].details["error"] == "ZeroDivisionError: a bug"
        assert not [e for e in cluster.trace.events if e.kind == "conn_close"]


async def test_an_answer_the_version_cannot_carry_becomes_the_error_answer(monkeypatch, autojump_clock):
    async def unencodable(ctx, request):
        return {"error_code": 0, "groups": [{"group_id": 12345, "protocol_type": "consumer"}]}

    async with open_cluster(1, listen=False) as cluster:
        swap_handler(monkeypatch, ApiKey.LIST_GROUPS, unencodable)
        answer = await WireClient(cluster.connect(0)).call(LIST_GROUPS, 4, {"states_filter": []})
        assert answer["error_code"] == -1 and answer["groups"] == []
        (error,) = [e for e in cluster.trace.events if e.kind == "handler_error"]
        assert error.details["stage"] == "encoder"


async def test_with_no_answer_that_fits_only_that_connection_closes(monkeypatch, autojump_clock):
    import broker_emu.server

    async def broken(ctx, request):
        raise RuntimeError("a bug")

    def no_error_answer(*args):
        raise KeyError("no error answer either")

    monkeypatch.setattr(broker_emu.server, "error_response", no_error_answer)
    async with open_cluster(1, listen=False) as cluster:
        swap_handler(monkeypatch, ApiKey.LIST_GROUPS, broken)
        bad = WireClient(cluster.connect(0))
        await bad.send(LIST_GROUPS, 4, {"states_filter": []})
        assert await bad.closed()
        other = WireClient(cluster.connect(0))
        md = await other.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False})
        assert md["brokers"]
        (close,) = [e for e in cluster.trace.events if e.kind == "conn_close"]
        assert close.details["closed_by"] == "broker" and "internal error (handler)" in close.details["reason"]


def test_the_suite_fails_a_test_during_which_a_handler_error_happened(pytester):
    pytester.makeconftest("from tests.conftest import _no_handler_errors  # noqa: F401")
    pytester.makepyfile(test_inner="""
        from broker_emu.trace import HANDLER_ERRORS, TraceEvent

        def test_quietly_broken():
            HANDLER_ERRORS.record(TraceEvent(0.0, "handler_error", api="Fetch", api_version=12,
                                             details={"stage": "handler", "error": "KeyError: 'x'"}))
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:broker_emu")
    result.assert_outcomes(passed=1, errors=1)   # the test body passed; its teardown fails it
    result.stdout.fnmatch_lines(["*1 handler_error(s) in the emulator during this test: Fetch v12: handler: KeyError*"])


def test_injected_transaction_errors_name_every_partition_as_kafka_does():
    """AddPartitionsToTxnRequest / TxnOffsetCommitRequest.getErrorResponse: a client reads its
    partition's error there, so an injected error must not answer with no partitions."""
    from broker_emu.handlers import error_response
    from client.protocol import ApiKey

    add = {"v3_and_below_transactional_id": "tx", "v3_and_below_topics": [{"name": "t", "partitions": [0, 2]}]}
    got = error_response(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add, 48)
    assert got["results_by_topic_v3_and_below"] == [{"name": "t", "results_by_partition": [
        {"partition_index": 0, "partition_error_code": 48}, {"partition_index": 2, "partition_error_code": 48}]}]
    assert error_response(ApiKey.ADD_PARTITIONS_TO_TXN, 4, add, 48) == {"error_code": 48}
    commit = {"topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 5}]}]}
    assert error_response(ApiKey.TXN_OFFSET_COMMIT, 5, commit, 120) == {
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 120}]}]}
