"""The transaction error-class table (conformance/txn_errors/): the classifier on synthetic
probe outcomes, the table's rendering, and real cells of our client in virtual time."""

from pathlib import Path

from conformance.adapters.ours import OurAdapter
from conformance.model import Outcome, Result, Status
from conformance.txn_errors import cases, table
from conformance.txn_errors.cases import ABORTABLE, ABSORBED, FATAL, RETRIABLE, classify
from conformance.virtual import run_virtual_time

OP = "txn_error_probe"


def probe(call, retry=None, abort=None, nxt=None, error="X", after=1.5):
    return Outcome(OP, False, after, error, "m", value={"call": call, "retry": retry, "abort": abort, "next": nxt})


def test_the_class_comes_from_what_followed_the_failure():
    assert classify(probe("commit", retry="ok")).klass == RETRIABLE
    assert classify(probe("init", retry="ok", nxt="ok")).klass == RETRIABLE
    assert classify(probe("init", retry="ok", nxt="KafkaException")).klass == FATAL   # init again, but nothing after it works
    assert classify(probe("init", retry="ProducerFencedException")).klass == FATAL
    assert classify(probe("send", retry="KafkaException", abort="ok", nxt="ok")).klass == ABORTABLE
    assert classify(probe("commit", retry="KafkaException", abort="ok", nxt="TimeoutException")).klass == FATAL
    assert classify(probe("commit", retry="KafkaException", abort="KafkaException")).klass == FATAL
    absorbed = classify(Outcome(OP, True, 40.0, value={"call": None, "slowest": "commit"}))
    assert (absorbed.klass, absorbed.call, absorbed.after_s) == (ABSORBED, "commit", 40.0)
    cell = classify(probe("send", retry="E", abort="ok", nxt="ok", error="TransactionAbortableException", after=0.2))
    assert (cell.call, cell.after_s, cell.error) == ("send", 0.2, "TransactionAbortableException")
    assert classify(Outcome(OP, False, 3.0, "NoReturn", "the call never returned")).klass == "error"


def test_the_table_renders_each_cell_in_kafkas_time_and_replaces_its_block(tmp_path: Path):
    case = cases.CASES[0]
    r = Result(cases.scenario_id(case), "c", Status.PASS)
    r.evidence = type("E", (), {"outcomes": [probe("commit", retry="ok", after=0.5)], "scale": 10.0})()
    text = table.table([r], ["c"])
    assert "**retriable** · commitTransaction · 5.0 s `X`" in text
    assert "not run" in text   # the other cases
    doc = tmp_path / "t.md"
    doc.write_text("# T\n\nkept\n")
    table.write(doc, [r], ["c"])
    table.write(doc, [r], ["c"])
    out = doc.read_text()
    assert out.count(table.BEGIN) == 1 and out.startswith("# T\n\nkept\n")


def _cell(case_id: str):
    scenario = next(s for s in cases.SCENARIOS if s.id == case_id)
    result = run_virtual_time(scenario, OurAdapter())
    assert result.status is Status.PASS, result.contracts
    return table.cell_of(result)


def test_our_client_fenced_at_commit_is_fatal():
    cell = _cell("txn-error.endtxn.producer_fenced")
    assert (cell.klass, cell.call, cell.error) == (FATAL, "commit", "ProducerFencedError")


def test_our_client_held_coordinator_load_times_init_out_at_max_block_and_init_again_works():
    cell = _cell("txn-error.initproducerid.coordinator_load_in_progress")
    assert (cell.klass, cell.call, cell.error) == (RETRIABLE, "init", "TimeoutException")
    assert cell.after_s == cases.BUDGET["max.block.ms"] / 1000
