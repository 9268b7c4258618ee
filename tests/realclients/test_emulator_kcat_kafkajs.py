"""kcat (librdkafka from Debian) and kafkajs (Node) against `broker-emu` on 3 brokers."""

import json
import subprocess

import pytest

from tests.realclients.conftest import require_client, run_node

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]   # passes on kfake too (--broker kfake)


def kcat(cluster, *args, input=None, timeout=30):
    return subprocess.run(["kcat", "-b", cluster.bootstrap, *args], input=input, capture_output=True, timeout=timeout)


def test_kcat(cluster):
    require_client("kcat")
    lines = b"".join(b"k%d:m%d\n" % (i, i) for i in range(10))
    out = kcat(cluster, "-P", "-t", "t", "-p", "0", "-K:", "-X", "acks=all", input=lines)
    assert out.returncode == 0, out.stderr
    big = kcat(cluster, "-P", "-t", "t", "-p", "0", "-X", "acks=all", "-X", "message.max.bytes=1000000", input=b"B" * 900_000 + b"\n")
    assert big.returncode == 0, big.stderr
    read = kcat(cluster, "-C", "-t", "t", "-p", "0", "-o", "beginning", "-e", "-f", "%k=%S\n", "-X", "fetch.message.max.bytes=1048576")
    assert read.returncode == 0, read.stderr
    rows = read.stdout.decode().split()
    assert rows == [f"k{i}=2" for i in range(10)] + ["=900000"]
    latest = kcat(cluster, "-Q", "-t", "t:0:-1")
    earliest = kcat(cluster, "-Q", "-t", "t:0:-2")
    assert latest.stdout.decode().strip() == "t [0] offset 11", latest.stderr
    assert earliest.stdout.decode().strip() == "t [0] offset 0", earliest.stderr
    # a balanced-consumer group member commits; a second one resumes after the commits
    first = kcat(cluster, "-G", "kcg", "-o", "beginning", "-e", "-f", "%s\n", "-X", "fetch.message.max.bytes=1048576", "t", timeout=60)
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.decode().splitlines()) == 11
    kcat(cluster, "-P", "-t", "t", "-p", "0", input=b"after\n")
    # without -o the member resumes from the group's commits (earliest where nothing was committed)
    second = kcat(cluster, "-G", "kcg", "-e", "-f", "%s\n", "-X", "auto.offset.reset=earliest", "t", timeout=60)
    assert second.stdout.decode().split() == ["after"], second.stderr


def test_kafkajs(cluster):
    require_client("kafkajs")
    out = run_node("emulator_kafkajs.js", cluster.bootstrap)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    latest = {int(p["partition"]): int(p["offset"]) for p in seen["latest"]}
    assert latest == {0: 5, 1: 3, 2: 3}
    assert {int(p["partition"]): int(p["offset"]) for p in seen["byTime"]}[0] == 4
    assert sorted(seen["first"]) == sorted([f"m{i}" for i in range(10)] + ["big:900000"])
    assert sorted(seen["second"]) == ["after0", "after1"]
