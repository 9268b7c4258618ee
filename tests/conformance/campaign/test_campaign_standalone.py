"""A campaign on a Spark standalone cluster (conformance/campaign/standalone.py: a master and a
worker on loopback, from pyspark's own spark-class): its tasks run in executor processes the
worker launched — a real-time client's run in a process of its own below that — and its verdicts
are a plain loop's."""

import json
import subprocess
import sys

import pytest

from conformance.campaign.execute import execute
from conformance.campaign.matrix import expand
from tests.realclients.clients import require_client

pytestmark = pytest.mark.realclient

MATRIX = {"name": "standalone", "seeds": [1], "scale": 30, "runs": [
    {"clients": ["ours"], "scenarios": ["kip19.slow-broker-no-reconnect"], "grid": {"request.timeout.ms": [10000, 30000]}},
    {"clients": ["kafka-python"], "scenarios": ["server.purgatory-request-timed-out"]},
]}


def test_a_campaign_runs_on_a_standalone_cluster_as_in_a_loop(tmp_path):
    require_client("kafka-python")
    import yaml

    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump(MATRIX))
    logs, out = tmp_path / "logs", tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "conformance.campaign.standalone", "--cores", "2", "--memory", "1g",
                           "--logs", str(logs), str(matrix), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["campaign"]["master"].startswith("spark://127.0.0.1:")
    got = {(r["scenario"], r["client"], r["params"]): (r["passed"], r["failed"], r["errors"]) for r in summary["per_key"]}
    loop = {}
    for run in (r.as_row() for r in expand(MATRIX)):
        status = execute(run, scale=30)[0]["status"]
        loop[(run["scenario"], run["client"], run["params"])] = (int(status == "pass"), int(status == "fail"),
                                                               int(status == "error"))
    assert got == loop and len(got) == 3
    executors = list((logs / "work").glob("app-*/*/stderr"))
    assert executors, "no executor process ran a task"
