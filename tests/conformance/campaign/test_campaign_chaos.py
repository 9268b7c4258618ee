"""Chaos seeds in a campaign: ``chaos:`` groups expand to one run per seed, the accounting is
summed with Spark SQL by hand on a fixed trace, and a small chaos campaign on Spark counts
exactly what a plain loop over the same seeds counts."""

import json
import pathlib
import re
from collections import Counter
from xml.etree import ElementTree

import pytest

from conformance.campaign import report
from conformance.campaign.aggregate import chaos_actions, chaos_per_config, chaos_worst_seeds, register, summarise
from conformance.campaign.chaos_runs import COUNTS, execute_chaos, replay_command
from conformance.campaign.execute import ROW_FIELDS
from conformance.campaign.job import run_campaign, spark_schema
from conformance.campaign.matrix import MatrixError, expand
from conformance.chaos.cli import totals
from conformance.chaos.ours import run_seed

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

OURS = "broker-emu (async)"
DEFAULT = {"duration": 8.0, "interval": 0.1, "partitions": 3, "producers": 3}


# -- the matrix --------------------------------------------------------------------------------

def test_chaos_groups_expand_to_one_run_per_client_parameters_and_seed():
    runs = expand({"chaos": [{"seeds": {"count": 3, "start": 10}, "duration": 4},
                             {"clients": ["ours"], "seeds": [1], "grid": {"interval": [0.05, 0.2]}}]})
    assert [(r.scenario, r.family, r.client, r.seed, r.rep) for r in runs[:3]] == \
        [("chaos", "Chaos", OURS, s, 0) for s in (10, 11, 12)]
    assert json.loads(runs[0].params) == {**DEFAULT, "duration": 4.0}          # every parameter resolved
    assert [json.loads(r.params)["interval"] for r in runs[3:]] == [0.05, 0.2]
    assert [r.run_id for r in runs] == list(range(5))
    assert len(expand({"chaos": {}})) == 100                 # broker-emu chaos's default for ours
    real = expand({"chaos": {"clients": ["kafka-python", "aiokafka", "confluent-kafka@2.12.0"], "seeds": [3]}})
    assert [(r.client, json.loads(r.params)["duration"]) for r in real] == \
        [("kafka-python", 60.0), ("aiokafka", 60.0), ("confluent-kafka@2.12.0", 60.0)]   # real time: 60 s seeds
    txn = expand({"chaos": {"clients": ["confluent-kafka", "java", "franz-go"], "seeds": [0], "txn": True}})
    assert [(r.client, json.loads(r.params)["txn"]) for r in txn] == \
        [("confluent-kafka", True), ("java", True), ("franz-go", True)]
    mixed = expand({"seeds": [1], "scenarios": ["kip19.produce-black-hole"], "chaos": {"seeds": [5, 6]}})
    assert [(r.family, r.seed) for r in mixed] == [("KIP-19", 1), ("Chaos", 5), ("Chaos", 6)]


@pytest.mark.parametrize("chaos, words", [
    ({"clients": ["kcat"]}, "chaos runs the clients"),
    ({"acks": "1", "enable.idempotence": True}, "needs acks=all"),
    ({"acks": "2"}, "all or 1"),
    ({"duration": 1}, "duration >= 2"),
    ({"grid": {"linger.ms": [5]}}, "unknown chaos parameter"),
    ({"seed": [1]}, "unknown key"),
    ({"interval": "fast"}, "numbers"),
    ({"clients": ["sarama"], "txn": True}, "the clients with a transactional workload"),
    ({"txn": "yes"}, "true or false"),
])
def test_bad_chaos_groups_are_refused_before_any_run(chaos, words):
    with pytest.raises(MatrixError, match=words):
        expand({"chaos": [chaos]})


# -- the aggregates, by hand -------------------------------------------------------------------

def _seed(run_id, seed, status, params=DEFAULT, **counts):
    row = dict.fromkeys(name for name, _ in ROW_FIELDS)
    row.update(record="run", run_id=run_id, scenario="chaos", family="Chaos", client=OURS, params=json.dumps(params),
               seed=seed, rep=0, status=status, simulated_s=10.0 + seed, wall_s=0.5)
    if status in ("pass", "fail"):
        row.update(dict.fromkeys(COUNTS, 0), consumer_missed=0, consumer_wrong=0, sent=100, acked=100, in_log=100,
                   actions=json.dumps({"leader": 2, "bounce": 1}))
        row.update(counts)
    return row


FIXED = [
    _seed(0, 0, "pass"),
    _seed(1, 1, "pass", reordered=2, dup_across_epochs=1),
    _seed(2, 2, "fail", lost=3, acked=97, failed_records=3),
    _seed(3, 3, "error"),
    _seed(4, 4, "pass", params={**DEFAULT, "duration": 4.0}, sent=50, acked=50),
]


def test_chaos_counts_actions_and_worst_seeds_by_hand(spark):
    register(spark, spark.createDataFrame(FIXED, spark_schema()))    # only the chaos queries: seconds each
    chaos = {"per_config": chaos_per_config(spark), "actions": chaos_actions(spark),
             "worst_seeds": chaos_worst_seeds(spark)}
    four, eight = chaos["per_config"]
    assert (eight["seeds"], eight["passed"], eight["bad_seeds"], eight["errors"]) == (4, 2, 1, 1)
    assert (eight["sent"], eight["acked"], eight["lost"], eight["failed_records"]) == (300, 297, 3, 3)
    assert (eight["reordered"], eight["dup_across_epochs"], eight["dup_in_epoch"]) == (2, 1, 0)
    assert (four["seeds"], four["sent"], four["lost"]) == (1, 50, 0)
    assert {(a["params"] == json.dumps(DEFAULT), a["action"], a["steps"]) for a in chaos["actions"]} == \
        {(True, "leader", 6), (True, "bounce", 3), (False, "leader", 2), (False, "bounce", 1)}
    worst = chaos["worst_seeds"]
    # errors, then failures, then the odd (reordered, across epochs), then the slowest to converge
    assert [w["seed"] for w in worst] == [3, 2, 1, 4, 0]
    assert worst[1]["replay"] == ("broker-emu chaos --client ours --seeds 1 --duration 8 --interval 0.1 "
                                  "--producers 3 --partitions 3 --verbose --first-seed 2")


# -- a small chaos campaign end to end ---------------------------------------------------------

def test_a_small_chaos_campaign_on_spark_counts_what_a_plain_loop_counts(spark, tmp_path):
    seeds, params = range(20, 26), {"duration": 4.0, "interval": 0.1, "partitions": 3, "producers": 3}
    runs = [r.as_row() for r in expand({"runs": [{"scenarios": ["kip19.produce-black-hole"], "seeds": [1]}],
                                        "chaos": {"seeds": list(seeds), "duration": 4}})]
    runs.append({**runs[-1], "run_id": len(runs), "seed": 99, "params": json.dumps({"duration": "x"})})  # breaks
    path = run_campaign(spark, runs, str(tmp_path), parallelism=2, progress=False)
    summary = summarise(spark, spark.read.parquet(path))
    assert {p.name for p in pathlib.Path(path, "record=run").iterdir() if p.is_dir()} == {"family=KIP-19", "family=Chaos"}

    loop = [run_seed(seed, **params) for seed in seeds]        # the same seeds, no Spark, no campaign code
    want = totals(loop)
    broken, got = sorted(summary["chaos"]["per_config"], key=lambda c: c["params"] == json.dumps(params))
    assert (broken["seeds"], broken["errors"], broken["sent"]) == (1, 1, 0)    # the broken row: counted, not lost
    assert {column: got[column] for column in COUNTS if column != "in_log"} == \
        {column: want[field] for column, field in COUNTS.items() if column != "in_log"}
    assert (got["consumer_missed"], got["consumer_wrong"]) == (want["consumer_missed"], want["consumer_wrong"])
    assert (got["seeds"], got["errors"], got["bad_seeds"]) == (6, 0, sum(1 for r in loop if r.bad()))
    assert got["sent"] == got["acked"] > 6 * 60 and got["lost"] == got["dup_in_epoch"] == 0
    actions: Counter = Counter()
    for r in loop:
        actions.update(r.actions)
    assert {a["action"]: a["steps"] for a in summary["chaos"]["actions"]} == dict(actions)
    fired = spark.read.parquet(path).where("record = 'event' AND kind = 'chaos_action'").count()
    assert fired == sum(len(r.executed) for r in loop)
    worst = summary["chaos"]["worst_seeds"]
    assert worst[0]["seed"] == 99 and worst[0]["status"] == "error" and "numbers" in worst[0]["message"]
    assert {w["seed"] for w in worst} == {*seeds, 99}
    assert summary["totals"]["runs"] == 8 and all(w["scenario"] != "chaos" for w in summary["worst_runs"])

    summary["campaign"] = {"name": "t", "wall_s": 1.0, "runs_per_minute": 1.0, "master": "local[2]"}
    _, html_path = report.write(str(tmp_path), summary)
    page = pathlib.Path(html_path).read_text()
    assert "Failover chaos" in page and "broker-emu chaos --client ours" in page
    for svg in re.findall(r"<svg.*?</svg>", page, re.DOTALL):
        ElementTree.fromstring(svg)


def test_producer_settings_are_chaos_parameters_named_as_kafka_names_them():
    runs = expand({"chaos": {"clients": ["ours"], "seeds": [0], "grid": {"acks": ["all", "1"]}}})
    assert [json.loads(r.params) for r in runs] == [{**DEFAULT, "acks": "all"},
                                                    {**DEFAULT, "acks": "1", "enable.idempotence": False}]
    strong, weak = (execute_chaos(r.as_row(), {"run_id": r.run_id}) for r in runs)
    assert strong[0]["lost"] == 0 and weak[0]["lost"] > 0           # seed 0 truncates acks=1 writes
    assert strong[0]["status"] == weak[0]["status"] == "pass"       # acks=1 never promised them
    violations = [json.loads(r["details"])["contract"] for r in weak if r.get("kind") == "violation"]
    assert violations == []
    assert "--acks 1" in replay_command("broker-emu (async)", runs[1].params, 0)
