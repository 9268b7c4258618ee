"""KRaft's controller deadline for admin writes: CreateTopics, CreatePartitions, DeleteTopics and
ElectLeaders turn ``timeout_ms`` into a deadline for the controller's event
(``ControllerRequestContext.requestTimeoutMsToDeadlineNs``), and the controller's event queue fails
an event whose deadline passed before it ran. Then the whole request is REQUEST_TIMED_OUT, with no
message, and nothing is changed — not even validated: Kafka 4.4 answers a CreateTopics with
``timeout_ms`` 0 so for a bad name, an existing topic or ``validate_only`` alike (docs/findings.md).

The emulated controller gets to a request ``emu.controller.delay.ms`` after it arrived (0: at
once), so a deadline shorter than that expires — answered at the deadline — and ``timeout_ms`` 0 or
less always does. (ZooKeeper-era brokers applied the change first and timed out only waiting for
it to spread.)
"""

from __future__ import annotations

import trio

from broker_emu.context import RequestContext
from broker_emu.trace import Kind


async def controller_in_time(ctx: RequestContext, api: str, timeout_ms: int) -> bool:
    """Wait as the controller does; False when the deadline passed first (the caller answers
    REQUEST_TIMED_OUT for every item and changes nothing)."""
    delay_ms = ctx.cluster.config["emu.controller.delay.ms"]
    if timeout_ms > 0 and delay_ms <= timeout_ms:   # the queue checks now > deadline
        if delay_ms:
            await trio.sleep(delay_ms / 1000)
        return True
    if timeout_ms > 0:
        await trio.sleep(timeout_ms / 1000)
    ctx.cluster.trace.emit(Kind.CONTROLLER_DEADLINE, broker=ctx.broker_id,
                           details={"api": api, "timeout_ms": timeout_ms, "controller_delay_ms": delay_ms})
    return False


async def zookeeper_change_in_time(ctx: RequestContext, api: str, timeout_ms: int) -> bool:
    """The ZooKeeper-era answer (version profile 2.8): the change is already written; the broker
    waits up to ``timeout_ms`` for it to reach every broker (DelayedCreatePartitions), which the
    emulator says takes ``emu.controller.delay.ms``. False: REQUEST_TIMED_OUT for what was
    changed — at once when ``timeout_ms`` is 0 or less (ZkAdminManager.createTopics)."""
    delay_ms = ctx.cluster.config["emu.controller.delay.ms"]
    if timeout_ms > 0 and delay_ms <= timeout_ms:
        if delay_ms:
            await trio.sleep(delay_ms / 1000)
        return True
    if timeout_ms > 0:
        await trio.sleep(timeout_ms / 1000)
    ctx.cluster.trace.emit(Kind.CONTROLLER_DEADLINE, broker=ctx.broker_id, details={
        "api": api, "timeout_ms": timeout_ms, "controller_delay_ms": delay_ms, "zookeeper": True, "applied": True})
    return False
