"""`broker-emu kafka start` gives Kafka's own defaults: a new topic is created by a client's
first produce (auto.create.topics.enable), and the start-up line lists every setting that
differs from Kafka's defaults — the test harness's own settings are not among them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import client
from tests.realkafka.conftest import require_kafka

pytestmark = pytest.mark.realkafka
REPO = Path(__file__).resolve().parents[2]


def test_kafka_start_has_kafkas_defaults_and_says_where_it_differs():
    require_kafka()
    proc = subprocess.Popen([sys.executable, "-m", "conformance.main", "kafka", "start", "--brokers", "1"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any(line.startswith("Ctrl-C") for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            lines.append(proc.stdout.readline())
        bootstrap = next(line for line in lines if line.startswith("bootstrap=")).strip().split("=", 1)[1]
        differs = next(line for line in lines if line.startswith("Kafka's defaults, except"))
        assert "auto.create.topics.enable" not in differs and "group.initial.rebalance.delay.ms" not in differs
        assert "offsets.topic.replication.factor=1 (Kafka: 3)" in differs
        with client.Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as p:   # no topic made first
            assert p.send("made-by-its-first-produce", b"v").result(60).offset == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "stopped cleanly" in out, out[-2000:]
