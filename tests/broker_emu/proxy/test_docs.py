"""The Python example in docs/proxy.md runs as written and prints what the page says."""

import re

import pytest

from tests import ROOT

DOC = ROOT / "docs" / "proxy.md"

pytestmark = pytest.mark.realclient


def test_the_proxy_doc_example_runs(capsys):
    pytest.importorskip("confluent_kafka")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 1
    exec(compile(blocks[0], "proxy.md[0]", "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    assert "['recv', 'fault_applied', 'send']" in out
    held = int(re.search(r"held (\d+) ms", out).group(1))
    assert 195 <= held < 2000
