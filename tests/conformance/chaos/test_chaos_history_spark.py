"""The history checker in Spark SQL (conformance/chaos/checker_spark.py) over a directory of
Parquet histories counts, run by run and anomaly by anomaly, what the pure checker counts: on
every hand-made scenario (tests/conformance/chaos/chaos_scripts.py) and on real chaos seeds: clean, with
acks=1's losses, and with transactions and each planted bug."""

import pytest

from conformance.chaos.checker import ANOMALIES, check
from conformance.chaos.checker_spark import check_histories, per_run, runs_of
from conformance.chaos.history_parquet import write_parquet
from conformance.chaos.ours import run_seed
from tests.conformance.chaos.chaos_scripts import SCENARIOS, build

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning")]


def test_spark_counts_every_anomaly_as_the_pure_checker_does(spark, tmp_path):
    pure = {}
    for number, name in enumerate(sorted(SCENARIOS)):
        history, expected = build(name)
        write_parquet(history, tmp_path, client="script", seed=number, plant=name)
        pure["script", number, name] = check(history).counts()
        assert {k: v for k, v in pure["script", number, name].items() if v} == expected
    for seed in (0, 2):
        for acks in ("all", "1"):
            result = run_seed(seed, duration=6.0, acks=acks, idempotence=acks == "all")
            label = f"acks={acks}"
            write_parquet(result.history, tmp_path, client="ours", seed=seed, plant=label)
            pure["ours", seed, label] = result.check.counts()
    for plant in ("", "lose-ack", "dup-retry", "reuse-offset", "aborted-read", "lso-past-open", "fenced-epoch",
                  "lso-at-high"):
        result = run_seed(0, txn=True, plant=plant)
        write_parquet(result.history, tmp_path, client="ours-txn", seed=0, plant=plant)
        pure["ours-txn", 0, plant] = result.check.counts()
    assert pure["ours-txn", 0, "lso-past-open"]["uncommitted-read"] >= 1   # read before its commit
    assert pure["ours-txn", 0, "fenced-epoch"]["fenced-write"] == 1
    found = check_histories(spark, str(tmp_path))
    got = per_run(found, runs_of(spark, str(tmp_path)))
    assert got == pure
    assert any(counts["lost-write"] for (client, _, _), counts in pure.items() if client == "ours")
    assert pure["ours-txn", 0, "aborted-read"]["aborted-read"] == 1
    assert not any(pure["ours-txn", 0, ""][kind] for kind in (*ANOMALIES, "unseen"))
    assert pure["ours-txn", 0, "lso-at-high"]["G1c"] > 0 and pure["ours-txn", 0, ""]["G0"] > 0
    witness = found.where("plant = 'lost' AND kind = 'lost-write'").collect()
    history, _ = build("lost")
    (anomaly,) = check(history).anomalies["lost-write"]
    assert [list(row["ops"]) for row in witness] == [[op.index for op in anomaly.ops]]
