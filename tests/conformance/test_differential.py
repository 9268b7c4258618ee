"""The differential logic and the run-on-Kafka helpers on synthetic traces (no broker, no client)."""

from __future__ import annotations

from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import first_to_give_up, purgatory_stays
from conformance import differential as D
from conformance.model import Evidence, Operation, Outcome, Result, Status
from conformance.on_kafka import (
    BrokerNumbers,
    _in_order,
    by_features,
    cluster_features,
    derive_purgatory,
    kafka_support,
    rename,
    unrename_outcomes,
    unrename_snapshot,
    unrename_trace,
)
from conformance.scenarios import BY_ID, CATALOGUE

CONFIG = {"request.timeout.ms": 1000, "fetch.max.wait.ms": 17, "acks": "all"}


def ev(t: float, kind: str, api: str | None = None, conn: int = 1, corr: int | None = None, **details) -> TraceEvent:
    return TraceEvent(t, kind, broker=1, conn=conn, client_id="c", correlation_id=corr, api=api,
                      details=details)


def produce(t: float, wait: float | None, conn: int = 1, corr: int = 5, errors=(), close_at: float | None = None,
            closed_by: str = "client") -> list[TraceEvent]:
    out = [ev(t, Kind.RECV, "Produce", conn, corr)]
    if wait is not None:
        out.append(ev(t + wait, Kind.SEND, "Produce", conn, corr, **({"errors": list(errors)} if errors else {})))
    if close_at is not None:
        out.append(ev(close_at, Kind.CONN_CLOSE, None, conn, closed_by=closed_by, reason="x"))
    return out


def result(trace: list[TraceEvent], status: Status = Status.PASS, scenario: str = "s", config=None) -> Result:
    r = Result(scenario, "client", status)
    r.evidence = Evidence([], derive_purgatory(trace, dict(config or CONFIG)), dict(config or CONFIG), 30.0)
    return r


# -- purgatory stays read from the wire -------------------------------------------------------------

def test_request_timed_out_is_an_expired_stay_at_the_answer():
    trace = derive_purgatory(produce(100.0, 1003.0, errors=[7]), CONFIG)
    [stay] = purgatory_stays(trace, "Produce")
    assert stay.expired and stay.duration_ms == 1003.0 and stay.timeout_ms == 1000.0
    assert stay.enter.details["derived"] is True
    assert first_to_give_up(trace).who == "broker"


def test_quick_answer_is_no_stay_and_late_acks_all_answer_completes():
    assert purgatory_stays(derive_purgatory(produce(0.0, 3.0), CONFIG)) == []
    [stay] = purgatory_stays(derive_purgatory(produce(0.0, 300.0), CONFIG))
    assert not stay.expired and stay.end is not None
    assert purgatory_stays(derive_purgatory(produce(0.0, 300.0), {**CONFIG, "acks": "1"})) == []


def test_abandoned_produce_is_a_stay_the_client_gave_up_on_unless_a_fault_swallowed_it():
    trace = derive_purgatory(produce(0.0, None, close_at=1000.0), CONFIG)
    gave_up = first_to_give_up(trace)
    assert gave_up.who == "client" and gave_up.after_ms == 1000.0
    swallowed = produce(0.0, None, close_at=1000.0) + [ev(0.0, Kind.FAULT_APPLIED, "Produce", 1, 5, action={"type": "black_hole"})]
    assert purgatory_stays(derive_purgatory(swallowed, CONFIG)) == []


# -- renaming -----------------------------------------------------------------------------------------

def test_rename_reaches_topics_steps_groups_and_rules_and_comes_back():
    s = BY_ID["server.purgatory-request-timed-out"]
    renamed, back = rename(s, "r1")
    assert renamed.topics == (("t-r1", 1, 3),)
    assert renamed.steps[0].args["topic"] == "t-r1"
    assert renamed.faults[0]["replication"]["topic"] == "t-r1"
    g, _ = rename(BY_ID["kip266.committed-coordinator-black-hole"], "r2")
    assert g.steps[0].args == {"group": "cg-r2", "topic": "t-r2", "partition": 0}
    assert back == {"t-r1": "t"}
    assert unrename_snapshot({"log_end_offsets": {"t-r1-0": 2}}, back) == {"log_end_offsets": {"t-0": 2}}
    assert unrename_outcomes([Outcome("admin_list_topics", True, 0.1, value=["t-r1", "other"])], back)[0].value == ["t", "other"]
    recv = TraceEvent(1.0, Kind.RECV, api="Produce", details={"topics": ["t-r1"]})
    assert unrename_trace([recv], back)[0].details == {"topics": ["t"]}
    assert s.steps[0].args["topic"] == "t"   # the catalogue's own scenario is untouched


def test_every_scenario_says_whether_it_runs_on_kafka():
    reasons = {s.id: kafka_support(s, 1) for s in CATALOGUE}
    assert reasons["kip19.produce-black-hole"] == ""
    assert "needs in-memory" in reasons["kip19.connection-setup-timeout"] or reasons["kip19.connection-setup-timeout"]
    assert "--kafka-brokers 3" in reasons["server.purgatory-request-timed-out"]
    assert kafka_support(BY_ID["server.purgatory-request-timed-out"], 3) == ""
    assert "leader" in reasons["kip19.leader-move-during-black-hole"]
    assert "stops a broker" in reasons["failover.bootstrap-broker-dies-metadata"]
    weird = BY_ID["kip266.poll-zero"].__class__(**{**BY_ID["kip266.poll-zero"].__dict__, "broker_config": {"num.io.threads": 1}})
    assert "num.io.threads" in kafka_support(weird, 1)


def test_a_feature_level_formats_a_cluster_of_its_own():
    from dataclasses import replace

    plain = BY_ID["kip19.produce-black-hole"]
    v1 = replace(plain, id="v1", broker_config={"transaction.version": 1, "log.retention.ms": 1000})
    v2 = replace(plain, id="v2", broker_config={"transaction.version": 2})   # Kafka 4.4's own level
    elsewhere = replace(BY_ID["txn.late-end-txn"], id="not-on-kafka")   # names version 1, N/A on Kafka anyway
    assert cluster_features(v1) == {"transaction.version": 1} and cluster_features(v2) == {}
    assert kafka_support(v1, 1) == ""   # a feature is no per-scenario broker setting: the format sets it
    groups = by_features([v1, plain, elsewhere, v2], 1)
    assert [(f, [s.id for s in g]) for f, g in groups] == [
        ({}, [plain.id, "not-on-kafka", "v2"]), ({"transaction.version": 1}, ["v1"])]
    # results from two clusters come back in one run's order: client by client, scenario by scenario
    results = [Result(s, c, Status.PASS) for s, c in [("b", "y"), ("a", "y"), ("b", "x"), ("a", "x")]]
    ordered = _in_order([replace(plain, id="a"), replace(plain, id="b")],
                        [type("A", (), {"name": n})() for n in ("x", "y")], results)   # type: ignore[list-item]
    assert [(r.scenario, r.client) for r in ordered] == [("a", "x"), ("b", "x"), ("a", "y"), ("b", "y")]


def test_a_scenario_naming_brokers_runs_on_a_cluster_that_has_them():
    required = BY_ID["rebootstrap.required-answer"]
    assert "names broker 2" in kafka_support(required, 1) and "--kafka-brokers 3" in kafka_support(required, 1)
    assert kafka_support(required, 3) == ""   # its leader is placed at the start: the topic's first replica


def test_broker_numbers_go_up_in_the_upstreams_ids_and_come_back():
    numbers = BrokerNumbers([3, 1, 2])   # the Kafka launcher's nodes
    up = numbers.scenario(BY_ID["rebootstrap.required-answer"])
    assert up.bootstrap_brokers == (1,)
    assert up.faults[0]["move_leader"]["broker"] == 2
    assert sorted(r["match"]["broker"] for r in up.faults if "broker" in r.get("match", {})) == [1, 2, 3]
    back = numbers.trace([ev(0.0, Kind.RECV, "Metadata"), TraceEvent(1.0, Kind.CONN_OPEN, broker=None)])
    assert [e.broker for e in back] == [0, None]


def test_a_leader_placed_at_the_start_is_the_first_replica_the_topic_is_created_with():
    from conformance.upstreams import _new_topic

    def made(name, partitions=None, rf=None, config=None, replica_assignment=None):
        return (partitions, rf, replica_assignment)

    assert _new_topic(made, "t", 2, 3, {}, [1, 2, 3], {("t", 0): 2}) == (2, None, [[2, 1, 3], [2, 3, 1]])
    assert _new_topic(made, "u", 2, 3, {}, [1, 2, 3], {("t", 0): 2}) == (2, 3, None)


# -- observations and rows ---------------------------------------------------------------------------

def test_observations_of_one_run():
    trace = derive_purgatory(produce(0.0, 1004.0, errors=[7]) + [
        ev(2000.0, Kind.RECV, "Fetch", 2, 1), ev(2017.0, Kind.SEND, "Fetch", 2, 1),
        ev(3000.0, Kind.RECV, "Metadata", 3, 1), ev(3000.05, Kind.CONN_CLOSE, None, 3, closed_by="client", reason="eos"),
    ], CONFIG)
    obs = D.observe(trace, CONFIG)
    assert obs["Produce: answers"].value == ["REQUEST_TIMED_OUT"]
    assert obs["Produce: first answer after"].show() == "1004 ms (1.00 x request.timeout.ms)"
    assert obs["Fetch: first answer after"].ref_ms == 17.0
    assert "Metadata: answers" not in obs   # the client closed at once: nothing said about the broker
    assert obs["Metadata: requests"].value == 1
    assert obs["Produce purgatory: expired (REQUEST_TIMED_OUT)"].value == 1
    assert obs["Produce purgatory: expiry after"].value == 1004.0
    assert obs["connections closed by the broker"].show() == "none"


def test_tolerances():
    assert D.same(D.Obs(1000.0, "time", 1000.0), D.Obs(1090.0, "time", 1000.0)) == (True, "± 100 ms")
    assert D.same(D.Obs(1000.0, "time", 3000.0), D.Obs(1290.0, "time", 3000.0))[0]
    assert not D.same(D.Obs(5.0, "time", 1000.0), D.Obs(1004.0, "time", 1000.0))[0]
    assert D.same(D.Obs(3, "count"), D.Obs(5, "count"))[0] and not D.same(D.Obs(1, "count"), D.Obs(9, "count"))[0]
    assert not D.same(D.Obs(["NONE"], "exact"), D.Obs(["NONE", "REQUEST_TIMED_OUT"], "exact"))[0]


def test_rows_say_same_different_and_not_seen():
    emu = result(produce(0.0, 1003.0, errors=[7]))
    kafka = result(produce(0.0, 2.0) + [ev(5.0, Kind.CONN_CLOSE, None, 1, closed_by="broker", reason="upstream closed")],
                   Status.FAIL)
    rows = {r.observation: r for r in D.differential([emu], [kafka])}
    assert rows["verdict of the scenario's contracts"].verdict == "different"
    assert rows["Produce: answers"].verdict == "different"
    assert rows["Produce: answers"].emulator == "REQUEST_TIMED_OUT" and rows["Produce: answers"].kafka == "NONE"
    assert rows["Produce: first answer after"].verdict == "different"
    assert rows["Produce: requests"].verdict == "same"
    assert rows["connections closed by the broker"].kafka == "1: upstream closed"
    assert rows["Produce purgatory: expiry after"].kafka == "(not seen)"
    assert rows["Produce purgatory: expiry after"].verdict == "n/a"
    assert D.summary(list(rows.values()))["different"] >= 4


def test_swallowed_requests_and_those_behind_them_are_not_unanswered():
    trace = produce(0.0, None, close_at=1000.0) + [ev(0.0, Kind.FAULT_APPLIED, "Produce", 1, 5, action="black_hole"),
                                                   ev(10.0, Kind.RECV, "Metadata", 1, 6)]
    obs = D.observe(trace, CONFIG)
    assert "Produce: answers" not in obs and "Metadata: answers" not in obs
    assert obs["Produce: abandoned by the client"].value == 1
    assert "Produce: answers" not in D.observe(produce(0.0, None, close_at=1000.0), CONFIG)   # the client gave up
    later = [ev(500.0, Kind.CONN_OPEN, None, 2)]
    assert D.observe(produce(0.0, None) + later, CONFIG)["Produce: answers"].value == ["(unanswered)"]   # owed at the end
    assert "Produce: answers" not in D.observe(produce(450.0, None) + later, CONFIG)   # sent as the run ended
    closed_first = [ev(10.0, Kind.CONN_CLOSE, None, 1, closed_by="client", reason="eos")] + produce(11.0, None) + later
    assert "Produce: answers" not in D.observe(closed_first, CONFIG)   # read after the client closed
    broker_closed = produce(0.0, None, close_at=50.0, closed_by="broker")
    assert D.observe(broker_closed, CONFIG)["Produce: answers"].value == ["(unanswered)"]


def test_na_on_either_side_is_one_na_row():
    emu = result([])
    kafka = Result("s", "client", Status.NA, message="stalls a follower: a 1-node cluster has none")
    [row] = D.differential([emu], [kafka])
    assert row.verdict == "n/a" and "1-node" in row.kafka


def test_reports_render():
    rows = D.differential([result(produce(0.0, 2.0))], [result(produce(0.0, 3.0))])
    assert '"same"' in D.to_json(rows, kafka_brokers=1)
    page = D.to_html(rows, kafka_brokers=1)
    assert "<table>" in page and "Produce: answers" in page


def test_steps_keep_their_deadline_when_renamed():
    s = BY_ID["kip266.poll-empty-at-deadline"]
    renamed, _ = rename(s, "x")
    assert renamed.steps[0] == Operation("poll", {"topic": "t-x", "partition": 0, "offset": "earliest"}, timeout_s=2.0)


def test_per_cell_counts_and_the_command_that_reproduces_each():
    rows = D.differential([result(produce(0.0, 1003.0, errors=[7]), scenario="a"), result(produce(0.0, 2.0), scenario="b")],
                          [result(produce(0.0, 2.0), scenario="a"), result(produce(0.0, 3.0), scenario="b")])
    table = {c.scenario: c for c in D.cells(rows, kafka_brokers=3)}
    assert table["a"].different >= 2 and table["b"].different == 0 and table["b"].same == sum(r.scenario == "b" for r in rows)
    assert table["a"].reproduce == "broker-emu conformance --diff --broker kafka --kafka-brokers 3 --scenario a --client client"
    assert D.reproduce("s", "broker-emu (blocking)", 1, 10.0).endswith("--scale 10 --scenario s --client ours-blocking")
    totals = D.by_client(list(table.values()))["client"]
    assert totals["cells"] == 2 and totals["cells with a difference"] == 1
    assert totals["same"] + totals["different"] + totals["n/a"] == len(rows)
    page = D.to_html(rows, list(table.values()), kafka_brokers=3)
    assert "--kafka-brokers 3 --scenario a" in page and "Per scenario and client" in page
    assert '"cells with a difference": 1' in D.to_json(rows, list(table.values()))


def test_a_difference_is_one_that_reproduces_in_every_run_of_its_cell():
    quick, late = result(produce(0.0, 2.0), scenario="a"), result(produce(0.0, 900.0), scenario="a")
    rows = D.differential([late], [quick])
    assert ("a", "client") in D.to_confirm(rows)
    key = "Produce: first answer after"
    # late on the emulator again in both re-runs: a difference
    kept = {r.observation: r for r in D.settle(rows, {("a", "client"): [(late, quick), (late, quick)]})}
    assert kept[key].verdict == "different" and kept[key].runs == "different in 3 of 3 runs"
    # once only: flaky, and counted apart from differences
    settled = D.settle(rows, {("a", "client"): [(quick, quick), (late, quick)]})
    flaky = {r.observation: r for r in settled}[key]
    assert flaky.verdict == "flaky" and flaky.runs == "different in 2 of 3 runs"
    assert D.summary(settled)["different"] == 0 and D.summary(settled)["flaky"] >= 1
    [cell] = D.cells(settled, kafka_brokers=1)
    assert cell.flaky >= 1 and cell.different == 0
    # a verdict that flips: the same rule
    failing = result(produce(0.0, 2.0), Status.FAIL, scenario="a")
    rows = D.differential([failing], [quick])
    flipped = D.settle(rows, {("a", "client"): [(quick, quick)]})
    assert flipped[0].observation == "verdict of the scenario's contracts" and flipped[0].verdict == "flaky"
    assert D.settle(rows, {("a", "client"): [(failing, quick)]})[0].verdict == "different"


def test_the_emulator_side_has_the_kafka_sides_size():
    from conformance.upstreams import EmulatorUpstream

    scenario = BY_ID["kip848.crashed-member-expires-at-broker-session"]   # 3 brokers, ("t", 4, 3)
    assert scenario.brokers == 3 and scenario.topics == (("t", 4, 3),)
    with EmulatorUpstream(1).cell(scenario, 30.0) as cell:
        assert len(cell.bootstrap.split(",")) == 1
        assert cell.tc.call(lambda: len(cell.tc.cluster.partition("t", 3).replicas)) == 1
    with EmulatorUpstream(3).cell(scenario, 30.0) as cell:
        assert len(cell.bootstrap.split(",")) == 3
        assert cell.tc.call(lambda: len(cell.tc.cluster.partition("t", 3).replicas)) == 3
