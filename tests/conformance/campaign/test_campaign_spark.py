"""Campaigns on Spark with one shared session: aggregates against hand-computed values on a
fixed trace, and a small campaign end to end (Spark's verdicts equal a plain loop's)."""

import json
import pathlib
import re
from xml.etree import ElementTree

import pytest

from conformance.campaign import report
from conformance.campaign.aggregate import summarise
from conformance.campaign.execute import ROW_FIELDS, execute
from conformance.campaign.job import run_campaign, spark_schema
from conformance.campaign.matrix import expand

# py4j (the Python-JVM bridge) leaves its callback sockets to the garbage collector
pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

KEY_A = json.dumps({"request.timeout.ms": 30000})
KEY_B = json.dumps({"request.timeout.ms": 10000})


def _run(run_id, status, params=KEY_A, **figures):
    row = dict.fromkeys(name for name, _ in ROW_FIELDS)
    row.update(record="run", run_id=run_id, scenario="s", family="F", client="c", params=params, seed=run_id,
               rep=0, status=status, api="Produce", request_timeout_ms=30000.0, **figures)
    return row


def _event(run_id, kind, api=None, params=KEY_A, details=None):
    row = dict.fromkeys(name for name, _ in ROW_FIELDS)
    row.update(record="event", run_id=run_id, scenario="s", family="F", client="c", params=params, seed=run_id, rep=0,
               kind=kind, ev_api=api, t_ms=0.0, details=details)
    return row


FIXED = [
    _run(1, "pass", overshoot_ms=10.0, disconnect_error_ms=0.0, first_timeout="client", purgatory_timeout_ms=30000.0,
         lost=0, duplicated=0),
    _run(2, "pass", overshoot_ms=20.0, disconnect_error_ms=-5.0, first_timeout="broker", purgatory_timeout_ms=15000.0,
         lost=0, duplicated=1),
    _run(3, "fail", overshoot_ms=30.0, disconnect_error_ms=5.0, first_timeout="none", lost=1, duplicated=0),
    _run(4, "error", overshoot_ms=40.0),
    _run(5, "n/a", params=KEY_B),
    _event(1, "recv", "Produce"),
    _event(1, "recv", "Metadata"),
    _event(2, "recv", "Produce"), _event(2, "recv", "Produce"),
    _event(3, "recv", "Produce"), _event(3, "recv", "Produce"),
    _event(3, "violation", details=json.dumps({"contract": "produce outcome"})),
    _event(4, "violation", details=json.dumps({"contract": "run"})),
]


@pytest.fixture(scope="module")
def fixed_summary(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fixed") / "traces")
    spark.createDataFrame(FIXED, spark_schema()).write.partitionBy("record", "family").parquet(path)
    return summarise(spark, spark.read.parquet(path))


def test_pass_rate_percentiles_and_loss_by_hand(fixed_summary):
    a, b = fixed_summary["per_key"][1], fixed_summary["per_key"][0]
    assert (a["params"], b["params"]) == (KEY_A, KEY_B)
    assert (a["runs"], a["passed"], a["failed"], a["errors"]) == (4, 2, 1, 1)
    assert a["pass_rate"] == 0.5                    # 2 of 4 judged
    # exact percentiles with linear interpolation over 10, 20, 30, 40: rank (n-1)p
    assert a["overshoot_pct"] == pytest.approx([25.0, 38.5, 39.7]) and a["overshoot_max"] == 40.0
    assert a["disconnect_n"] == 3 and a["disconnect_error_pct"] == pytest.approx([0.0, 4.5, 4.9])
    assert a["disconnect_error_absmax"] == 5.0
    assert (a["lost"], a["duplicated"]) == (1, 1)
    assert b["runs"] == 1 and b["na"] == 1 and b["pass_rate"] is None   # n/a is not judged
    assert fixed_summary["totals"]["runs"] == 5 and fixed_summary["totals"]["events"] == 8


def test_attempts_first_timeout_violations_and_worst_runs_by_hand(fixed_summary):
    hist = {(r["params"], r["attempts"]): r["runs"] for r in fixed_summary["attempts"]}
    # Produce requests per run: 1, 2, 2, 0 (run 4 has none; the Metadata does not count)
    assert hist == {(KEY_A, 0): 1, (KEY_A, 1): 1, (KEY_A, 2): 2, (KEY_B, 0): 1}
    assert [(r["ratio"], r["side"], r["runs"]) for r in fixed_summary["first_timeout"]] == [(0.5, "broker", 1), (1.0, "client", 1)]
    assert {(v["contract"], v["runs"]) for v in fixed_summary["violations"]} == {("produce outcome", 1), ("run", 1)}
    worst = fixed_summary["worst_runs"]
    assert [w["run_id"] for w in worst[:4]] == [4, 3, 2, 1]   # error/fail first, then by overshoot
    assert worst[0]["replay"] == "broker-emu conformance --scenario s --client c --seed 4 --param request.timeout.ms=30000"


def test_a_small_campaign_on_spark_matches_a_plain_loop(spark, tmp_path):
    runs = [r.as_row() for r in expand({"clients": ["ours"], "seeds": [1, 2], "runs": [
        {"scenarios": ["kip19.slow-broker-no-reconnect"], "grid": {"request.timeout.ms": [10000, 30000]}},
        {"scenarios": ["server.purgatory-request-timed-out", "kip266.committed-coordinator-black-hole"]},
    ]})]
    runs.append({**runs[0], "run_id": len(runs), "client": "no-such-client"})     # breaks: an error row, not a failed job
    path = run_campaign(spark, runs, str(tmp_path), parallelism=2, progress=False)
    summary = summarise(spark, spark.read.parquet(path))
    loop = {r["run_id"]: execute(r)[0]["status"] for r in runs}
    got = {w["run_id"]: w["status"] for w in spark.read.parquet(path).where("record = 'run'").collect()}
    assert got == loop and len(got) == 9
    assert summary["totals"]["errors"] == 1
    # a 20 s slow broker against a 10 s request timeout: the no-reconnect contract fails, at 30 s it holds
    slow = {r["params"]: r["pass_rate"] for r in summary["per_key"]
            if r["scenario"] == "kip19.slow-broker-no-reconnect" and r["client"] == "broker-emu (async)"}
    assert slow == {json.dumps({"request.timeout.ms": 10000}): 0.0, json.dumps({"request.timeout.ms": 30000}): 1.0}
    summary["campaign"] = {"name": "t", "wall_s": 1.0, "runs_per_minute": 1.0, "master": "local[2]"}
    json_path, html_path = report.write(str(tmp_path), summary)
    page = pathlib.Path(html_path).read_text()
    assert page.count("<svg") >= 2 and "request.timeout.ms" in page and "replay" in page
    for svg in re.findall(r"<svg.*?</svg>", page, re.DOTALL):
        ElementTree.fromstring(svg)          # each plot is well-formed SVG
    assert json.loads(pathlib.Path(json_path).read_text())["totals"]["runs"] == 9
