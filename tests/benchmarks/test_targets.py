"""benchmarks/broker.py's targets: the registry, a target that cannot run here, the side-by-side
report (its measurements replaced: no broker is started)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import broker


@pytest.fixture
def registry(monkeypatch):
    targets = dict(broker.TARGETS)
    monkeypatch.setattr(broker, "TARGETS", targets)
    return targets


def test_default_targets_in_order():
    assert list(broker.TARGETS)[:3] == ["emulator", "mock", "kfake"]


def test_one_function_adds_a_target(registry):
    @broker.target("elsewhere")
    def elsewhere(args):
        return broker.Target("elsewhere", "somewhere else", "127.0.0.1:1")

    assert registry["elsewhere"] is elsewhere
    (started,) = broker.start_targets(["elsewhere"], True, argparse.Namespace())
    assert started.address == "127.0.0.1:1"


def test_an_unavailable_target_is_left_out_unless_named(registry, capsys):
    stopped = []

    @broker.target("absent")
    def absent(args):
        raise broker.TargetUnavailable("not built here")

    @broker.target("present")
    def present(args):
        return broker.Target("present", "present", "127.0.0.1:2", lambda: stopped.append("present"))

    started = broker.start_targets(["present", "absent"], False, argparse.Namespace())
    assert [t.key for t in started] == ["present"]
    assert "target absent left out: not built here" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="target absent: not built here"):
        broker.start_targets(["present", "absent"], True, argparse.Namespace())
    assert stopped == ["present"]   # what was started before the refusal is stopped


def test_report_gives_ratios_against_the_first_target(monkeypatch, capsys):
    use = {"broker": 0.75, "client": 1.2, "busiest_client_thread": 0.98}
    monkeypatch.setattr(broker, "interleaved", lambda targets, size, acks, seconds, rounds: ([1000.0, 2000.0, 500.0], [use, use, None]))
    monkeypatch.setattr(broker, "metadata_rtts", lambda addresses: [(0.2, 0.4), (0.1, 0.4), (0.4, 0.8)])
    monkeypatch.setattr(broker, "produce_rtts", lambda addresses: [(0.3, 0.5), (0.1, 0.2), (0.3, 0.9)])
    targets = [broker.Target(k, k, f"a-{k}") for k in ("emulator", "mock", "kfake")]
    broker.report(targets, 1.0, 2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].split() == ["case", "emulator", "mock", "kfake"]
    row = next(line for line in lines if line.startswith("100 B acks=1"))
    assert "1,000/s 0.1 MB/s" in row and "(2.00x)" in row and "(0.50x)" in row
    assert row.count("x)") == 2                      # no ratio for the base itself
    cores = lines[lines.index(row) + 1]
    assert cores.split()[:6] == ["cores", "0.75", "+", "1.20", "(max", "0.98)"] and cores.rstrip().endswith("-")
    p50 = next(line for line in lines if line.startswith("metadata p50"))
    assert "(0.50x)" in p50 and "(2.00x)" in p50
    produce = next(line for line in lines if line.startswith("produce p50"))
    assert "0.300 ms" in produce and "(0.33x)" in produce and "(1.00x)" in produce
