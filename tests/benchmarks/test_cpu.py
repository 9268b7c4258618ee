"""benchmarks/cpu.py: the broker's and the client's CPU during a benchmark case, from /proc."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmarks.cpu import CpuMeter, split_threads

linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
# these spin threads and processes and read the share of a core each got: with other tests beside
# them on two cores a 0.3 s spin got 0.25 of one, so they run alone (dev/run-tests)
measures_cpu = pytest.mark.alone


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_threads_are_split_by_name_and_counted_from_the_first_sample():
    before = {1: ("python", 10.0), 2: ("rdk:mock", 5.0), 3: ("rdk:broker1", 1.0)}
    after = {1: ("python", 10.9), 2: ("rdk:mock", 5.4), 3: ("rdk:broker1", 1.3), 4: ("rdk:mock", 0.2)}
    broker, client, busiest = split_threads(before, after, "rdk:mock")
    assert (round(broker, 6), round(client, 6), round(busiest, 6)) == (0.6, 1.2, 0.9)   # thread 4 born in between
    broker, client, busiest = split_threads(before, after, None)   # no prefix: every thread is the client's
    assert (broker, round(client, 6)) == (0.0, 1.8)


@linux_only
@measures_cpu
def test_a_broker_process_that_spins_is_the_brokers_cpu():
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.perf_counter() + 0.6\n"
                              "while time.perf_counter() < end: pass\n"])
    try:
        meter = CpuMeter([child.pid])
        meter.start()
        time.sleep(0.5)
        use = meter.stop()
    finally:
        child.wait()
    assert use is not None
    assert use.broker > 0.4          # a core's worth, less what the start of the child and a busy CI took
    assert use.client < 0.3          # this process slept


@linux_only
@measures_cpu
def test_a_thread_named_like_the_mock_is_the_brokers_and_a_busy_thread_the_clients():
    prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl

    spun, release = threading.Event(), threading.Event()

    def mock_thread() -> None:
        prctl(15, b"rdk:mock-test", 0, 0, 0)   # PR_SET_NAME: what librdkafka names its mock's threads
        _spin(0.3)
        spun.set()
        release.wait()   # alive until measured: a thread that ended in between is not counted

    meter = CpuMeter([], "rdk:mock")
    thread = threading.Thread(target=mock_thread)
    meter.start()
    thread.start()
    try:
        assert spun.wait(10)
        _spin(0.3)   # the client's thread, this one
        use = meter.stop()
    finally:
        release.set()
        thread.join()
    assert use is not None
    assert use.broker > 0.3 and use.busiest_client_thread > 0.3   # each spun about half of the span
    assert use.client >= use.busiest_client_thread
