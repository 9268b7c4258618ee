"""Group configs (ConfigResource GROUP) on the wire, emulator against Apache Kafka 4.4: one script
of DescribeConfigs, IncrementalAlterConfigs and AlterConfigs — defaults and their broker synonyms,
overrides and their source, every kind of refusal (unknown name, not a number, under a
validator's minimum, outside the broker's range, a bad enum, APPEND on a non-list, the default
group) — run against both, answers compared."""

from __future__ import annotations

import pytest
import trio

from broker_emu.runtime import run_cluster_in_thread
from tests.broker_emu.wire import WireClient

DESCRIBE, ALTER, INCREMENTAL = 32, 33, 44
SET, DELETE, APPEND = 0, 1, 2
INTS = ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "consumer.assignment.interval.ms",
        "share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
        "share.delivery.count.limit", "share.partition.max.record.locks", "share.assignment.interval.ms",
        "streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms"]
OTHERS = [("share.auto.offset.reset", "bogus"), ("share.auto.offset.reset", "by_duration:PT1H"),
          ("share.isolation.level", "bogus"), ("share.renew.acknowledge.enable", "maybe"),
          ("errors.deadletterqueue.topic.name", "dlq"), ("errors.deadletterqueue.copy.record.enable", "true"),
          ("streams.assignor.name", "nope"), ("streams.rack.aware.assignment.tags", "a,b"),
          ("consumer.assignor.offload.enable", "true"), ("no.such.config", "1")]


def _plain(x):
    if hasattr(x, "items"):
        return {k: _plain(v) for k, v in x.items() if k != "documentation"}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def script(host: str, port: int) -> list:
    async def main() -> list:
        out: list = []
        async with await trio.open_tcp_stream(host, port) as stream:
            w = WireClient(stream)

            async def describe(name: str, keys: list[str] | None = None) -> None:
                r = await w.call(DESCRIBE, 4, {"resources": [{"resource_type": 32, "resource_name": name,
                                                              "configuration_keys": keys}],
                                               "include_synonyms": True, "include_documentation": False})
                result = _plain(r.results[0])
                result["configs"] = sorted(result["configs"], key=lambda c: c["name"])
                out.append(("describe", name, result))

            async def alter(name: str, configs: list, validate_only: bool = False, legacy: bool = False) -> None:
                if legacy:
                    body = [{"name": n, "value": v} for n, _, v in configs]
                    r = await w.call(ALTER, 2, {"resources": [{"resource_type": 32, "resource_name": name, "configs": body}],
                                                "validate_only": validate_only})
                else:
                    body = [{"name": n, "config_operation": op, "value": v} for n, op, v in configs]
                    r = await w.call(INCREMENTAL, 1, {"resources": [{"resource_type": 32, "resource_name": name,
                                                                     "configs": body}], "validate_only": validate_only})
                out.append(("alter", name, configs, _plain(r.responses[0])))

            await describe("g1")
            await alter("g1", [("consumer.session.timeout.ms", SET, "50000")])
            await describe("g1", ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"])
            await alter("g1", [("consumer.session.timeout.ms", APPEND, "50000")])
            await alter("g1", [("consumer.session.timeout.ms", DELETE, None)])
            await describe("g1", ["consumer.session.timeout.ms"])
            await alter("", [("consumer.session.timeout.ms", SET, "50000")])
            await describe("")
            await alter("g2", [("consumer.heartbeat.interval.ms", SET, "6000")], validate_only=True)
            await describe("g2", ["consumer.heartbeat.interval.ms"])
            await alter("g3", [("consumer.heartbeat.interval.ms", SET, "6000")], legacy=True)
            await describe("g3")
            await alter("g3", [("consumer.session.timeout.ms", SET, "50000")], legacy=True)   # replaces g3's whole set
            await describe("g3", ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"])
            for name in INTS:
                for value in ("-1", "1", "abc", "999999999"):
                    await alter("g4", [(name, SET, value)], validate_only=True)
            for name, value in OTHERS:
                await alter("g4", [(name, SET, value)], validate_only=True)
        return out

    return trio.run(main)


# alone: Kafka applies an alter through its controller and describes from its metadata image, so beside four
# workers on two cores its describe right after an alter once read the image before the change reached it (the
# emulator answers with the change at once); alone the image keeps up, as in every other run
@pytest.mark.alone
def test_group_configs_answer_as_kafka(kafka1):
    host, port = kafka1.bootstrap.split(",")[0].split(":")
    theirs = script(host, int(port))
    with run_cluster_in_thread(brokers=1) as tc:
        emu_host, emu_port = tc.bootstrap.split(",")[0].split(":")
        ours = script(emu_host, int(emu_port))
    assert len(ours) == len(theirs)
    for mine, kafka in zip(ours, theirs):
        assert mine == kafka
    # what the script saw, so a change on both sides still shows
    overridden = theirs[2][2]["configs"][1]
    assert (overridden["name"], overridden["value"], overridden["config_source"]) == ("consumer.session.timeout.ms", "50000", 8)
