"""Running a scenario for a virtual-time adapter (our client): the emulator in-process over
in-memory connections, under trio's MockClock with autojump, so a 120 s delivery timeout runs in
milliseconds of wall time and every time is exact."""

from __future__ import annotations

import time

import trio
import trio.testing

from broker_emu.runtime import open_cluster
from conformance.adapters.base import Adapter, RunEnv
from conformance.cluster_setup import apply_setup, snapshot
from conformance.judging import judge
from conformance.model import Evidence, Result, Scenario


def run_virtual_time(scenario: Scenario, adapter: Adapter) -> Result:

    state: dict = {}

    if scenario.bootstrap_brokers not in ((), (0,)):
        raise ValueError(f"{scenario.id}: virtual-time runs bootstrap from broker 0 (adapters map bootstrap nodes to it)")

    async def main() -> None:
        config = {"group.initial.rebalance.delay.ms": 0, **scenario.broker_config}
        async with open_cluster(scenario.brokers, topics=scenario.topics, config=config, listen=False) as cluster:
            apply_setup(cluster, scenario, 1.0)
            env = RunEnv("127.0.0.1:0", f"conformance-{adapter.name}", dict(scenario.client_config), 1.0, cluster,
                         clock=trio.current_time)
            state["outcomes"] = await adapter.run(scenario.steps, env)
            # let parked requests reach their end (virtual time: free), so the trace shows what
            # the broker did after the client gave up. The purgatories signal no "emptied", and
            # under the autojump clock this poll costs no real time.
            with trio.move_on_after(60):
                while len(cluster.produce_purgatory) or len(cluster.fetch_purgatory):  # noqa: ASYNC110
                    await trio.sleep(0.001)
            await trio.testing.wait_all_tasks_blocked()
            state["trace"] = list(cluster.trace.events)
            state["snapshot"] = snapshot(cluster)
            state["simulated"] = trio.current_time()
            state["client_id"] = env.client_id

    wall = time.perf_counter()
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    evidence = Evidence(state["outcomes"], state["trace"], dict(scenario.client_config), 1.0, state["snapshot"], state["client_id"],
                        steps=scenario.steps)
    result = judge(scenario, adapter.name, evidence, adapter.lacks)
    result.evidence = evidence
    result.wall_s = time.perf_counter() - wall
    result.simulated_s = state["simulated"]
    return result
