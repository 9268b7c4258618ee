"""docs/real-kafka.md's first Python example runs as written and prints what the doc shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.realkafka.conftest import require_kafka

pytestmark = pytest.mark.realkafka
DOC = Path(__file__).resolve().parents[2] / "docs" / "real-kafka.md"


def test_first_python_example_runs(capsys):
    require_kafka()
    source = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[0]
    exec(compile(source, "real-kafka.md[0]", "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    assert "acks=all: orders-0 offset=0" in out, out
    assert "stopped cleanly: True" in out, out
    assert re.search(r"bootstrap=127\.0\.0\.1:\d+ ready in \d+\.\d s", out), out
