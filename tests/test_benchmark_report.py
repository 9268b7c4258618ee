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
