"""Real-time campaign runs each in a child process (conformance/campaign/isolated.py): a real
client's run comes back as rows; a run whose process dies or hangs becomes an error row and a
violation with the child's logs — never an exception in the Spark task."""

import json
import stat

import pytest

from conformance.campaign.execute import execute
from conformance.campaign.isolated import execute_isolated
from tests.realclients.conftest import require_client

RUN = {"run_id": 7, "scenario": "kip19.produce-black-hole", "family": "KIP-19", "client": "kafka-python",
       "params": json.dumps({"request.timeout.ms": 30000}), "seed": 1, "rep": 0}


@pytest.mark.realclient
def test_a_real_clients_run_comes_back_from_its_own_process():
    require_client("kafka-python")
    rows = execute(RUN, scale=30.0)
    run = rows[0]
    assert (run["record"], run["client"], run["status"]) == ("run", "kafka-python", "pass"), run["message"]
    assert any(r["record"] == "event" and r["kind"] == "recv" for r in rows[1:])
    assert run["disconnect_error_ms"] is not None and abs(run["disconnect_error_ms"]) < 500   # scaled 1 s timeout


def fake_python(tmp_path, body: str):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_crashed_run_is_an_error_row_with_its_logs(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.executable", fake_python(tmp_path, "echo 'librdkafka: assertion failed' >&2; kill -SEGV $$"))
    rows = execute_isolated(RUN, 30.0)
    assert (rows[0]["status"], rows[0]["message"]) == ("error", "crashed: the run's process killed by signal SIGSEGV")
    violation = json.loads(rows[1]["details"])
    assert rows[1]["kind"] == "violation" and "assertion failed" in violation["logs"]


def test_a_hung_run_is_killed_at_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.executable", fake_python(tmp_path, "echo started >&2; exec sleep 60"))
    rows = execute_isolated(RUN, 30.0, limit_s=1.0)
    assert rows[0]["status"] == "error" and rows[0]["message"].startswith("hung: no result after 1 s")
    assert 1.0 <= rows[0]["wall_s"] < 10


@pytest.mark.realclient
def test_a_pinned_client_version_runs_that_release():
    """confluent-kafka@2.12.0 and kafka-python@2.0.2 beside the project's pins: each installed
    into its own folder and imported first by the run's process (campaign/client_versions.py)."""
    require_client("kafka-python")
    require_client("confluent-kafka")
    from conformance.campaign import client_versions
    from conformance.campaign.matrix import expand

    runs = expand({"clients": ["confluent@2.12.0", "confluent", "kafka-python@2.0.2"],
                   "scenarios": ["kip19.produce-black-hole"]})
    client_versions.ensure([r.client for r in runs])
    rows = {r.client: execute(r.as_row(), scale=30.0)[0] for r in runs}
    assert rows["confluent-kafka@2.12.0"]["client_version"] == "2.12.0"
    assert rows["confluent-kafka"]["client_version"] == "2.16.1"
    # both judged (their contracts ran); whether each passed is the campaign's finding, not this test's
    assert {rows[c]["status"] for c in ("confluent-kafka@2.12.0", "confluent-kafka")} <= {"pass", "fail"}
    # kafka-python 2.0.2 predates delivery_timeout_ms: the run says so in the client's own words
    old = rows["kafka-python@2.0.2"]
    assert (old["client_version"], old["status"]) == ("2.0.2", "error") and "delivery_timeout_ms" in old["message"]


def test_only_python_clients_take_a_version():
    from conformance.campaign.matrix import MatrixError, expand

    with pytest.raises(MatrixError, match="only aiokafka, confluent-kafka, kafka-python can be pinned"):
        expand({"clients": ["kcat@1.7"], "scenarios": ["kip19.produce-black-hole"]})
    with pytest.raises(MatrixError, match="not a release number"):
        expand({"clients": ["confluent@latest"], "scenarios": ["kip19.produce-black-hole"]})
