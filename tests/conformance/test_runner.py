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


def test_an_adapter_can_refuse_a_scenario_whose_setting_it_lacks():
    """supports_scenario: the runner asks the adapter about the scenario, not only its steps
    (sarama has a produce, but does not know the REBOOTSTRAP_REQUIRED rebootstrap.required-answer is about)."""
    from conformance.adapters.go_clients import SaramaAdapter
    from conformance.adapters.kcat import KcatAdapter
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import BY_ID

    scenario = BY_ID["rebootstrap.required-answer"]
    assert SaramaAdapter().supports(scenario.steps) == (True, "")
    ok, why = SaramaAdapter().supports_scenario(scenario)
    assert not ok and "lacks REBOOTSTRAP_REQUIRED" in why
    assert SaramaAdapter().supports_scenario(BY_ID["kip19.produce-black-hole"]) == (True, "")

    class Refusing(KcatAdapter):
        def available(self):
            return True, ""

        def supports_scenario(self, scenario):
            return False, f"refused {scenario.id}"

    scenario = BY_ID["kip91.delivery-timeout-in-flight"]   # kcat has what it needs: its own words stand
    [result] = run_plan(Plan([scenario], [Refusing()]))
    assert result.status.value == "n/a" and result.message == f"refused {scenario.id}"


def test_a_scenario_can_cap_the_scale_its_real_time_runs_use():
    """kip266.retries-shrink-to-time-left at scale 30 left the retry 67 ms, under the run's slack:
    it runs at 5 whatever the plan's scale, and says so in the evidence its contracts read."""
    from conformance.adapters.ours import OurBlockingAdapter

    scenario = BY_ID["kip266.retries-shrink-to-time-left"]
    assert scenario.scale_in(30.0) == 5.0 and scenario.scale_in(2.0) == 2.0
    assert BY_ID["kip19.produce-black-hole"].scale_in(30.0) == 30.0
    [result] = run_plan(Plan([scenario], [OurBlockingAdapter()], scale=30.0))
    assert result.status is Status.PASS, result.message
    assert result.evidence.scale == 5.0 and result.evidence.config["request.timeout.ms"] == 600
