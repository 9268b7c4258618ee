"""Real cells of the transaction error-class table (conformance/txn_errors/): confluent-kafka,
in real time at the harness's scale (10), classified from what it did after the error."""

import pytest

from conformance.adapters.confluent import ConfluentAdapter
from conformance.model import Status
from conformance.runner import run_real_time
from conformance.txn_errors.cases import FATAL, SCENARIOS
from conformance.txn_errors.table import cell_of
from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient


def test_confluent_invalid_txn_state_at_commit_is_fatal_and_librdkafka_says_so():
    require_client("confluent-kafka")
    scenario = next(s for s in SCENARIOS if s.id == "txn-error.endtxn.invalid_txn_state")
    result = run_real_time(scenario, ConfluentAdapter(), 30.0)
    assert result.status is Status.PASS, result.contracts
    cell = cell_of(result)
    assert (cell.klass, cell.call, cell.error) == (FATAL, "commit", "INVALID_TXN_STATE (fatal)"), cell
    assert cell.after_s < 1.0   # an answer, not a budget: it fails at once (real seconds at scale 10)
