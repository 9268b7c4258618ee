"""The runner drives every kind of adapter the base module invites (conformance/adapters/base.py)."""

import trio

from conformance.adapters.base import Adapter
from conformance.model import Outcome, Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID


class AsyncOnly(Adapter):
    """Subclasses Adapter directly, as the docs say: only the async ``run``, in real time."""

    name = "async-only"
    operations = frozenset({"poll"})

    async def run(self, steps, env):
        await trio.lowlevel.checkpoint()
        return [Outcome("poll", True, 0.0, value=0) for _ in steps]


def test_a_real_time_adapter_with_only_an_async_run_is_run_not_crashed():
    # it used to fail with AttributeError: the runner called run_blocking, which only
    # RealTimeAdapter has
    [result] = run_plan(Plan([BY_ID["kip266.poll-zero"]], [AsyncOnly()], scale=30.0))
    assert result.status is Status.PASS, result.message
