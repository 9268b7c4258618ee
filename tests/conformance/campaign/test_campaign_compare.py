"""The report's per-client comparison (conformance/campaign/compare.py): one column per client and
pinned release, one row per parameter set, and a mark where releases of one client disagree."""

import json
import re

from conformance.campaign.compare import comparison_tables, releases_disagree


def _row(client, rt, passed, failed=0, version=None, **extra):
    return {"scenario": "kip19.produce-black-hole", "client": client, "params": json.dumps({"request.timeout.ms": rt}),
            "runs": passed + failed, "passed": passed, "failed": failed, "errors": 0, "na": 0,
            "client_version": version, **extra}


def test_releases_of_one_client_that_disagree_are_named():
    assert releases_disagree({"confluent-kafka": 1.0, "confluent-kafka@2.12.0": 0.0, "java": 0.0}) == ["confluent-kafka"]
    assert releases_disagree({"confluent-kafka": 1.0, "confluent-kafka@2.12.0": 1.0, "java": 0.0}) == []
    assert releases_disagree({"confluent-kafka": 1.0, "java": 0.5}) == []          # different clients may differ
    assert releases_disagree({"confluent-kafka": None, "confluent-kafka@2.12.0": 0.0}) == []


def test_one_table_per_scenario_with_a_column_per_release():
    rows = [_row("confluent-kafka", 10000, 2, version="2.16.1", disconnect_n=2, disconnect_error_pct=[274.0, 500, 522]),
            _row("confluent-kafka@2.12.0", 10000, 0, 2, version="2.12.0"),
            _row("confluent-kafka", 30000, 2, version="2.16.1"),
            _row("confluent-kafka@2.12.0", 30000, 2, version="2.12.0"),
            _row("java", 10000, 1, 1, overshoot_n=2, overshoot_pct=[-3.0, 1, 2])]
    page = comparison_tables(rows)
    assert page.count("<table") == 1
    headers = re.findall(r"<th>([^<]*)</th>", page)
    assert headers == ["parameters", "confluent-kafka 2.12.0", "confluent-kafka 2.16.1", "java"]
    lines = page.split("<tr>")[2:]
    assert "≠ releases of confluent-kafka" in lines[0] and "≠" not in lines[1]
    assert "2/2 · disc +274" in lines[0] and "0/2" in lines[0] and "1/2 · over -3" in lines[0]
    assert lines[1].count("<td") == 4 and lines[1].endswith("></td></tr></table>")   # java has no run there
