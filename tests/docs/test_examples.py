"""The Python examples in the docs run as written (a doc example that rots is worse than none)."""

import re
import textwrap

import pytest

from tests import ROOT

DOCS = ROOT / "docs"
EXAMPLES = [(path.name, i, block) for path in [DOCS / "client.md", DOCS / "transactions.md", DOCS / "kip848.md", DOCS / "faults.md"]
            for i, block in enumerate(textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL))]


# what each example prints, in part: proof it did its work, not only that it did not raise
EXPECT = {("client.md", 0): ["offset=0", "None RecordMetadata("], ("client.md", 1): ["0\n"],
          ("client.md", 2): ["assigned [TopicPartition(topic='orders', partition=0), TopicPartition(topic='orders', partition=1)]",
                             "[b'order-0', b'order-1', b'order-2', b'order-3']",
                             "TopicPartition(topic='orders', partition=0): 2"],
          ("client.md", 3): ["[(b'order-0', 1), (b'order-1', 1), (b'order-2', 1)] lock 2000 ms",
                             "{TopicPartition(topic='orders', partition=0): None}\n[(b'order-1', 2)]\n[(b'order-1', 3)]"],
          ("client.md", 4): ["{'orders': RequestTimedOutError", "{'orders': None}", "{(2, 'orders'): None}"],
          ("transactions.md", 0): ["[b'kept']"],
          ("kip848.md", 0): ["50000 GROUP_CONFIG"],
          ("faults.md", 0): ["produce took 0.438 s\nproduce took 0.443 s\nproduce took 0.000 s\n<fault 1 latency: 2 hits> 2",
                             "high watermark 3"],
          ("faults.md", 1): ["{'action': {'type': 'black_hole', 'close_ms': 3000}, 'name': 'timeout'",
                             "'match': {'topic': 'orders'}, 'probability': 0.1}"],
          ("faults.md", 2): ["0\nhits 1\n{'group': 'billing', 'state': 'Stable', 'members': 1}"],
          ("faults.md", 3): ["10.000 s: a broker answered REBOOTSTRAP_REQUIRED: forgetting 0 (127.0.0.1:0), 1 (127.0.0.1:0)",
                             "<fault 1 rebootstrap: 1 hits> brokers known again: [0, 1]"],
          ("kip848.md", 1): ["[0, 1, 2, 3, 4, 5]", "Stable 1 1 stable {'orders': [0, 1, 2, 3, 4, 5]}"]}


@pytest.mark.parametrize("name,index,source", EXAMPLES, ids=[f"{n}-{i}" for n, i, _ in EXAMPLES])
def test_doc_example_runs(name, index, source, capsys):
    exec(compile(source, f"{name}[{index}]", "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    for expected in EXPECT[(name, index)]:
        assert expected in out, out
