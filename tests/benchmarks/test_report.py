"""benchmarks/report.py: docs/performance.md and its plots from the benchmarks' JSON (here a
small made-up set of figures; nothing is measured)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from benchmarks import report


def _figures(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "producer.json").write_text(json.dumps({
        "cores": 2, "seconds": 3.0, "rounds": 3,
        "cases": [{"size": 100, "acks": "1", "msgs": {"ours": 90_000.0, "kafka-python": 30_000.0}},
                  {"size": 10_240, "acks": "1", "msgs": {"ours": 25_000.0, "aiokafka": 20_000.0}}],
        "memory_per_record": {"ours": 168.0, "kafka-python": 722.0}}))
    (figures / "consumer.json").write_text(json.dumps({
        "cores": 2, "rounds": 3, "cases": [{"size": 100, "records_per_s": {"ours": 200_000.0, "aiokafka": 400_000.0}}]}))
    return figures


def test_tables_carry_the_ratios_and_every_figure_has_its_plot(tmp_path):
    docs = tmp_path / "docs"
    (docs).mkdir()
    (docs / "performance-notes.md").write_text("## What changed\n\nnotes here\n")
    text = report.build(_figures(tmp_path), docs)
    assert "| kafka-python | 30,000 | 3.0 | 3.00× |" in text          # 90k / 30k
    assert "| aiokafka | 20,000 | 204.8 | 1.25× |" in text              # 10 KB: MB/s column
    assert "| aiokafka | 400,000 | 40.0 | 0.50× |" in text              # the consumer, behind
    assert "| kafka-python | 722 |" in text and text.rstrip().endswith("notes here")
    plots = sorted(p.name for p in (docs / "performance").iterdir())
    assert plots == ["consumer-100B.svg", "producer-100B-acks1.svg", "producer-10240B-acks1.svg",
                     "producer-memory.svg"]
    for name in plots:
        assert f"performance/{name}" in text


def test_a_bar_chart_is_svg_with_bars_in_proportion():
    svg = report.bar_chart("t", "msg/s", {"ours": 100.0, "other": 50.0})
    root = ET.fromstring(svg)
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("height") == "16"]
    assert [float(b.get("width")) for b in bars] == [360.0, 180.0]


def test_scale_and_soak_sections_from_their_figures(tmp_path):
    figures = _figures(tmp_path)
    (figures / "scale.json").write_text(json.dumps({"cores": 2, "parked": [
        {"parked": 1000, "park_s": 0.5, "bytes_per_op": 5000.0, "expired": 1000, "late_p50_ms": 0.8,
         "late_p99_ms": 1.4, "late_max_ms": 4.0}],
        "connections": [{"connections": 1, "p50_ms": 0.3, "p99_ms": 0.5, "load_answers_per_s": 0, "rss_mib": 54},
                        {"connections": 1000, "p50_ms": 0.6, "p99_ms": 2.0, "load_answers_per_s": 990, "rss_mib": 80}]}))
    (figures / "memory.json").write_text(json.dumps({"soak": {
        "minutes": 30, "produced": 10, "consumed": 9, "rss_mib_by_minute": [[1, 100.0], [2, 101.0]],
        "slope_mib_per_hour_after_warmup": 0.5}}))
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    assert "| 1,000 | 5,000 | 2,000 | 1,000 | 0.8 ms | 1.4 ms | 4.0 ms |" in text   # 1000 parked in 0.5 s
    assert "| 1,000 | 0.600 ms | 2.000 ms | 2.00× | 990/s | 80 MiB |" in text       # p50 twice the idle one
    assert "**0.5 MiB per hour**" in text
    assert {"scale-parked-bytes.svg", "scale-parked-late.svg", "scale-connections.svg", "soak-rss.svg"} <= \
        {p.name for p in (docs / "performance").iterdir()}


def test_soak_slope_leaves_out_the_warm_up():
    from benchmarks.memory import slope_after_warmup

    samples = [(0, 10.0), (1, 50.0), (2, 90.0), (3, 100.0), (4, 100.5), (5, 101.0), (6, 101.5), (7, 102.0), (8, 102.5)]
    assert slope_after_warmup(samples) == 30.0   # 0.5 MiB a minute once warm; the climb before is left out


def test_the_suite_section_says_how_long_the_virtual_time_suite_took(tmp_path):
    figures = _figures(tmp_path)
    (figures / "suite.json").write_text(json.dumps({"markers": "not realclient and not realkafka", "wall_s": 321.4,
                                                    "cores": 2, "passed": 5000}))
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    assert "5,000 tests passed in **321 s**" in text


def _broker_run(path, other: str, size: int, msgs: list[float], p50s: list[float], cpu: list | None = None,
                produce: bool = True) -> None:
    """A benchmarks.broker --json file: the emulator and one other broker, one case."""
    case = {"size": size, "acks": "1", "msgs": msgs} | ({"cpu": cpu} if cpu is not None else {})
    path.write_text(json.dumps({
        "cores": 2, "seconds": 3.0, "rounds": 2, "targets": ["broker-emu", other],
        "cases": [case],
        "metadata_ms": [{"p50": p, "p99": p * 2} for p in p50s], "ready_s": [1.2, None]}
        | ({"produce_ms": [{"p50": p * 3, "p99": p * 4} for p in p50s]} if produce else {})))


def test_the_broker_section_puts_the_emulator_beside_each_other_broker(tmp_path):
    figures = _figures(tmp_path)
    _broker_run(figures / "broker.json", "librdkafka mock", 10240, [50_000.0, 100_000.0], [0.3, 0.15])
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    assert "| 10240 B acks=1 | 512.0 MB/s | 1,024.0 MB/s (0.50×) |" in text     # the emulator at half the mock
    assert "| metadata p50 | 0.300 ms | 0.150 ms (2.00×) |" in text
    assert "| produce 1 record p50 | 0.900 ms | 0.450 ms (2.00×) |" in text
    assert (docs / "performance" / "broker-10240B-acks1.svg").exists()
    _broker_run(figures / "broker.json", "librdkafka mock", 10240, [50_000.0, 100_000.0], [0.3, 0.15], produce=False)
    text = report.build(figures, docs)
    assert "| metadata p50 |" in text and "produce 1 record" not in text   # a run from before they were timed


def test_the_broker_section_gives_each_brokers_cpu_per_megabyte_when_measured(tmp_path):
    figures = _figures(tmp_path)
    cpu = [{"broker": 0.75, "client": 1.1, "busiest_client_thread": 0.6}, {"broker": 0.4, "client": 1.4, "busiest_client_thread": 1.0}]
    _broker_run(figures / "broker.json", "librdkafka mock", 10240, [50_000.0, 100_000.0], [0.3, 0.15], cpu)
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    # 0.75 cores over 512 MB/s: 1,465 µs a megabyte; the mock 0.4 over 1,024 MB/s: 391
    assert "| 10240 B acks=1 | 1,465 µs/MB; 0.75 + 1.10 cores (0.60) | 391 µs/MB; 0.40 + 1.40 cores (1.00) |" in text
    _broker_run(figures / "broker.json", "librdkafka mock", 10240, [50_000.0, 100_000.0], [0.3, 0.15])
    assert "µs/MB" not in report.build(figures, docs)   # a run from before CPU was measured: no table


def test_apache_kafka_measured_in_its_own_run_is_compared_with_that_runs_emulator(tmp_path):
    figures = _figures(tmp_path)
    _broker_run(figures / "broker.json", "librdkafka mock", 100, [300_000.0, 300_000.0], [0.2, 0.15])
    _broker_run(figures / "broker-kafka.json", "Apache Kafka 4.4", 100, [200_000.0, 100_000.0], [0.25, 0.5])
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    # the ratio is against the emulator of Kafka's own run (200,000/s), not the main run's
    assert "| 100 B acks=1 | 30.0 MB/s | 30.0 MB/s (1.00×) | 10.0 MB/s (2.00×) |" in text
    assert "| metadata p50 | 0.200 ms | 0.150 ms (1.33×) | 0.500 ms (0.50×) |" in text
    assert "Apache Kafka 4.4 (own run)" in text


def test_a_rerun_of_one_benchmark_keeps_the_other_sections_as_they_were(tmp_path):
    """The soak takes 30 minutes: refreshing the consumer's figures must not drop the rest."""
    docs = tmp_path / "docs"
    docs.mkdir()
    first = report.build(_figures(tmp_path), docs)
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    (rerun / "consumer.json").write_text(json.dumps({
        "cores": 2, "rounds": 3, "cases": [{"size": 100, "records_per_s": {"ours": 800_000.0, "aiokafka": 400_000.0}}]}))
    second = report.build(rerun, docs)
    producer = first[first.index("## Producer"):first.index("## Consumer")]
    assert producer in second and "| kafka-python | 30,000 | 3.0 | 3.00× |" in second
    assert "| aiokafka | 400,000 | 40.0 | 2.00× |" in second and "0.50×" not in second
    assert (docs / "performance" / "producer-100B-acks1.svg").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "## Producer" not in report.build(empty, tmp_path / "fresh")   # no earlier page: left out


def test_apache_kafka_measured_apart_is_a_round_trip_column_against_its_own_runs_emulator(tmp_path):
    figures = _figures(tmp_path)
    kinds = ("metadata", "fetch")
    (figures / "round-trips.json").write_text(json.dumps({
        "cores": 2, "rounds": 5, "per_round": 100, "targets": ["broker-emu", "franz-go kfake"],
        "kinds": {k: [{"p50": 0.2, "p99": 0.5}, {"p50": 0.1, "p99": 0.3}] for k in kinds}}))
    (figures / "round-trips-kafka.json").write_text(json.dumps({
        "cores": 2, "rounds": 3, "per_round": 100, "targets": ["broker-emu", "Apache Kafka 4.4"],
        "kinds": {k: [{"p50": 0.3, "p99": 0.6}, {"p50": 1.2, "p99": 2.0}] for k in kinds}}))
    docs = tmp_path / "docs"
    docs.mkdir()
    text = report.build(figures, docs)
    assert "| round trip | broker-emu | franz-go kfake | Apache Kafka 4.4 (own run) |" in text
    # kfake's ratio against this run's emulator (0.2 / 0.1), Kafka's against its own run's (0.3 / 1.2)
    assert "| metadata | 0.200 / 0.500 ms | 0.100 / 0.300 ms (2.00×) | 1.200 / 2.000 ms (0.25×) |" in text
    assert "its ratio is against that run's emulator" in text
