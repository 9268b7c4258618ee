"""The generated chaos report (conformance/chaos/report.py): docs/chaos.md holds what its stored
figures render to, and the figures are read right from a campaign's Parquet, chaos --json files
and planted-bug runs."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.chaos import report


def test_the_page_holds_what_the_stored_figures_render_to():
    assert report.main(["check"]) == 0


SCHEMA = pa.schema([("run_id", pa.int64()), ("client", pa.string()), ("params", pa.string()), ("seed", pa.int64()),
                    ("status", pa.string()), ("actions", pa.string()), ("kind", pa.string()), ("details", pa.string())])


def _campaign(tmp_path):
    """Three chaos seeds as a campaign writes them: one with a lost write, one with an error."""
    runs = [{"run_id": i, "client": "broker-emu (async)", "params": json.dumps({"duration": 8, "txn": i == 2}),
             "seed": i, "status": status, "actions": json.dumps(actions), "kind": None, "details": None}
            for i, status, actions in ((0, "pass", {"leader": 2, "bounce": 1}), (1, "fail", {"leader": 1}),
                                       (2, "error", {}))]
    witness = ["b'x' acknowledged at offset 3, never read", "#4 t=0.500 producer-0 ok send chaos-0 @3 b'x'",
               "#9 t=0.100 consumer ok poll [0@4=b'y']"]
    events = [{"run_id": 1, "client": "broker-emu (async)", "params": "{}", "seed": 1, "status": None,
               "actions": None, "kind": "violation",
               "details": json.dumps({"contract": "client history: no lost-write", "count": 1, "detail": witness})},
              {"run_id": 0, "client": "broker-emu (async)", "params": "{}", "seed": 0, "status": None,
               "actions": None, "kind": "chaos_action", "details": "{}"}]
    for record, rows in (("run", runs), ("event", events)):
        folder = tmp_path / "traces" / f"record={record}" / "family=Chaos"
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / "part-0.parquet")
    return witness


def test_a_campaign_is_counted_per_client_workload_and_fault_kind(tmp_path):
    witness = _campaign(tmp_path)
    (default, txn) = report.summarize(report.campaign_seeds(str(tmp_path)))
    assert (default["workload"], default["seeds"], default["with_anomaly"], default["errors"]) == ("default", 2, 1, 0)
    assert default["classes"] == {"lost-write": 1}
    assert default["kinds"]["leader"] == [2, 1] and default["kinds"]["bounce"] == [1, 0]
    assert default["witnesses"]["lost-write"] == {"seed": 1, "witness": witness}
    assert (txn["workload"], txn["seeds"], txn["errors"]) == ("txn", 1, 1)
    page = report.render({"clients": [default, txn], "mutation": []})
    assert "| broker-emu (async) | default | 2 (0–1) | **1** | 0 | lost-write 1 |" in page
    assert "| broker-emu (async) | default | 2 (1) | 0 (0) | 1 (0) |" in page


def test_a_witness_is_drawn_as_lanes_on_one_time_axis():
    lines = report.timeline(["what", "#9 t=0.500 c ok poll [0@1=b'a']", "#4 t=0.100 p ok send t-0 @1 b'a'"], width=24)
    assert lines[0] == "```" and lines[1] == "what" and lines[3].split() == ["t", "(s)", "c", "p"]
    assert lines[4] == "   0.100  " + " " * 24 + "#4 ok send t-0 @1 b'a'"   # p's lane, first in time
    assert lines[5] == "   0.500  #9 ok poll [0@1=b'a']" and lines[6] == "```"
    assert report.timeline(["w", "#4 t=0.100 p ok send t-0 @1 b'a'"], width=12)[4] == "   0.100  #4 ok send…"


def test_a_planted_bug_row_counts_fired_named_and_missed(tmp_path):
    def seed(n, fired, counts):
        examples = {k: [{"what": f"{k} here", "witness": ["#1 t=0.000 p ok send t-0 @0 b'a'"]}] for k in counts}
        return {"seed": n, "plant": {"name": "lso-at-high", "fired": ["x"] if fired else []},
                "history_check": {"counts": counts, "judged": ["G1c", "uncommitted-read"], "examples": examples}}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([seed(0, True, {"G1c": 2, "uncommitted-read": 1, "G0": 3}),
                                seed(1, True, {"uncommitted-read": 1}), seed(2, False, {})]))
    row = report.mutation_row(str(path), {"lso-at-high": ("G1c",)})
    assert (row["seeds"], row["fired"], row["named"], row["any"], row["missed"]) == (3, 2, 1, 2, [1])
    assert row["other"] == {"uncommitted-read": 2} and row["witness"][0] == "G1c here"


def test_new_outputs_add_to_the_stored_figures_and_a_txn_json_is_its_own_workload(tmp_path):
    """``extract --keep``: rows of clients and workloads the new outputs lack stay (earlier campaigns'
    outputs need not be kept to regenerate the page); ``--chaos-json-txn`` is the --txn workload; a
    seed that sent nothing is an error."""
    def seed(n, duplicate):
        return {"seed": n, "client": "confluent-kafka", "actions": {"leader": 1}, "judged": ["lost"],
                "totals": {"lost": 0}, "history_check": {"counts": {"duplicate": duplicate}, "judged": ["duplicate"],
                                                          "examples": {}}}
    path = tmp_path / "txn.json"
    path.write_text(json.dumps([seed(0, 0), seed(1, 2), {**seed(2, 0), "totals": {"lost": 0, "sent": 0}}]))
    old = {"clients": [{"client": "ours", "workload": "txn", "seeds": 5},
                       {"client": "confluent-kafka", "workload": "txn", "seeds": 1}], "mutation": [{"plant": "x"}]}
    data = report.extract([], [], [], [str(path)], keep=old)
    assert [(c["client"], c["workload"], c["seeds"]) for c in data["clients"]] == [
        ("confluent-kafka", "txn", 3), ("ours", "txn", 5)]
    assert data["clients"][0]["errors"] == 1     # seed 2 sent nothing: its clients never started
    assert data["clients"][0]["classes"] == {"duplicate": 1} and data["mutation"] == [{"plant": "x"}]


def test_the_mutation_table_has_its_rows_with_nothing_planted_and_the_old_counters(tmp_path):
    clean = {"seed": 0, "workload": "default", "judged": ["lost"], "totals": {"lost": 0}, "consumer_missed": 0,
             "consumer_wrong": 0, "history_check": {"counts": {"G0": 2}, "judged": ["lost-write"], "examples": {}}}
    lost = {**clean, "seed": 1, "totals": {"lost": 1}, "history_check": {
        "counts": {"lost-write": 1}, "judged": ["lost-write"],
        "examples": {"lost-write": [{"what": "lost", "witness": ["#1 t=0.000 p ok send t-0 @0 b'a'"]}]}}}
    path = tmp_path / "none.json"
    path.write_text(json.dumps([clean, lost]))
    row = report.mutation_row(str(path), {})
    assert (row["plant"], row["workload"], row["seeds"], row["any"], row["old"]) == ("", "default", 2, 1, 1)
    page = report.render({"clients": [], "mutation": [row]})
    assert "| none | default | 2 | — | — | **1** | lost-write 1 | — | 1 |" in page


def test_kafka_runs_are_a_section_of_their_own_and_update_keeps_the_rest(tmp_path):
    run = {"seed": 3, "client": "ours", "workload": "txn", "broker": "kafka", "judged": ["lost"], "totals": {"lost": 0},
           "actions": {"pause": 1, "leader": 2}, "consumer_missed": 0, "consumer_wrong": 0,
           "history_check": {"counts": {}, "judged": [], "examples": {}}}
    runs = tmp_path / "kafka.json"
    runs.write_text(json.dumps([run]))
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"clients": [{"kept": True}], "mutation": [], "kafka": []}))
    assert report.main(["extract", "--update", "--kafka-json", str(runs), "--data", str(data)]) == 0
    stored = json.loads(data.read_text())
    assert stored["clients"] == [{"kept": True}] and stored["mutation"] == []
    (kafka,) = stored["kafka"]
    assert (kafka["client"], kafka["workload"], kafka["seeds"], kafka["with_anomaly"]) == ("ours", "txn", 1, 0)
    assert kafka["kinds"]["pause"] == [1, 0] and kafka["kinds"]["leader"] == [1, 0]
    page = report.render({"clients": [], "mutation": [], "kafka": [kafka]})
    assert "| ours | txn | 1 (3–3) | **0** | 0 | — |" in page
    assert "| ours | txn | 1 (0) | 0 (0) | 1 (0) |" in page   # leader, bounce, pause


def test_kafka_rows_are_per_client_and_an_update_keeps_the_clients_not_run_again(tmp_path):
    def seed(client_name, workload, counts):
        return {"seed": 36, "client": client_name, "workload": workload, "broker": "kafka", "judged": ["lost"],
                "totals": {"lost": 0, "sent": 10}, "actions": {"bounce": 1}, "consumer_missed": 0, "consumer_wrong": 0,
                "history_check": {"counts": counts, "judged": ["duplicate"], "examples": {}}}
    first, second, data = tmp_path / "ours.json", tmp_path / "confluent.json", tmp_path / "data.json"
    first.write_text(json.dumps([seed("ours", "txn", {})]))
    second.write_text(json.dumps([seed("confluent-kafka", "txn", {"duplicate": 1})]))
    data.write_text(json.dumps({"clients": [], "mutation": [], "kafka": []}))
    assert report.main(["extract", "--update", "--kafka-json", str(first), "--data", str(data)]) == 0
    assert report.main(["extract", "--update", "--kafka-json", str(second), "--data", str(data)]) == 0
    rows = {(k["client"], k["workload"]): k for k in json.loads(data.read_text())["kafka"]}
    assert set(rows) == {("ours", "txn"), ("confluent-kafka", "txn")}
    assert rows["confluent-kafka", "txn"]["classes"] == {"duplicate": 1} and rows["ours", "txn"]["classes"] == {}
    page = report.render({"clients": [], "mutation": [], "kafka": list(rows.values())})
    assert "| confluent-kafka | txn | 1 (36–36) | **1** | 0 | duplicate 1 |" in page


def test_runs_of_one_plant_over_parts_of_the_seeds_make_one_row(tmp_path):
    def seed(n):
        return {"seed": n, "workload": "txn", "plant": {"name": "dup-retry", "fired": ["x"]},
                "history_check": {"counts": {"duplicate": 1}, "judged": ["duplicate"], "examples": {}}}
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([seed(0), seed(1), seed(2)]))
    second.write_text(json.dumps([seed(2), seed(3)]))    # seed 2 ran in both: counted once
    (row,) = report.extract([], [], [str(first), str(second)])["mutation"]
    assert (row["plant"], row["seeds"], row["fired"], row["named"]) == ("dup-retry", 4, 4, 4)


def test_update_keeps_the_stored_rows_of_planted_bugs_not_measured_again(tmp_path):
    stored = {"plant": "lso-at-high", "expected": ["G1c"], "seeds": 100, "fired": 100, "named": 100, "any": 100,
              "other": {}, "missed": [], "witness": []}
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"clients": [], "mutation": [stored], "kafka": []}))
    runs = tmp_path / "none.json"
    runs.write_text(json.dumps([{"seed": 0, "workload": "default", "history_check": {"counts": {}, "judged": []}}]))
    assert report.main(["extract", "--update", "--mutation", str(runs), "--data", str(data)]) == 0
    rows = json.loads(data.read_text())["mutation"]
    assert [(r["plant"], r.get("workload")) for r in rows] == [("", "default"), ("lso-at-high", None)]
