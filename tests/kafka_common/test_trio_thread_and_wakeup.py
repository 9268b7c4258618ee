"""The two helpers the client's loops and blocking faces and the emulator's timer loop and
``ThreadedCluster`` share: ``Wakeup`` (sleep until the next deadline or a wake-up, exact in
virtual time) and ``TrioThread`` (trio on a thread of its own)."""

import pytest
import trio

from kafka_common.trio_thread import TrioThread
from kafka_common.wakeup import Wakeup


async def test_wakeup_sleeps_until_its_deadline_or_a_set(autojump_clock):
    wake = Wakeup()
    assert await wake.sleep_until(1.5) is False
    assert trio.current_time() == 1.5

    async def later() -> None:
        await trio.sleep(0.25)
        wake.set()

    async with trio.open_nursery() as nursery:
        wake.new_cycle()
        nursery.start_soon(later)
        assert await wake.sleep_until(10.0) is True
    assert trio.current_time() == 1.75


async def test_a_set_before_the_sleep_is_kept_until_the_next_cycle(autojump_clock):
    wake = Wakeup()
    wake.new_cycle()
    wake.set()                                    # state changed while the loop was computing
    assert await wake.sleep_until(5.0) is True and trio.current_time() == 0
    wake.new_cycle()
    assert await wake.sleep_until(5.0) is False and trio.current_time() == 5.0


def test_trio_thread_runs_calls_and_stops():
    exits: list[BaseException | None] = []
    thread: TrioThread

    async def body() -> None:
        await thread.until_stopped()

    thread = TrioThread("test-trio-thread", body, exits.append)
    thread.start()
    assert thread.is_alive()

    async def add(a: int, b: int) -> int:
        await trio.lowlevel.checkpoint()
        return a + b

    assert thread.run(add, 2, 3) == 5
    assert thread.run_sync(lambda: 7) == 7
    thread.stop()
    assert not thread.is_alive() and exits == [None]
    with pytest.raises(trio.RunFinishedError):
        thread.run_sync_soon(lambda: None)


def test_trio_thread_hands_what_ended_it_to_on_exit_before_start_returns():
    exits: list[BaseException | None] = []

    async def body() -> None:
        raise RuntimeError("failed to start")

    thread = TrioThread("test-trio-thread", body, exits.append)
    thread.start()
    assert len(exits) == 1 and isinstance(exits[0], RuntimeError)
    thread.stop()   # a no-op on a finished thread
