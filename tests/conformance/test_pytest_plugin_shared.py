"""The pytest plugin as a user's suite meets it (each case a pytest run of its own, as in a user's
project): a shared cluster isolated per test, one per pytest-xdist worker, the switch that makes
``kafka_cluster`` shared, the factory, and the marker's options."""

from __future__ import annotations

import json
import re

import pytest

SHARED_SUITE = '''
import json, pathlib
import client

OUT = pathlib.Path(__file__).parent / "seen.jsonl"

def _note(**kw):
    with OUT.open("a") as f:
        f.write(json.dumps(kw) + "\\n")

def test_one_leaves_a_mess(FIXTURE):
    c = FIXTURE
    c.create_topic(c.unique("orders"), 1, 1)
    c.faults.black_hole(api="Produce")
    c.set_replication(mode="stall")
    c.stop_broker(2)
    _note(test=1, bootstrap=c.bootstrap, topic=c.unique("orders"), group=c.unique("g"))

def test_two_sees_none_of_it(FIXTURE):
    c = FIXTURE
    assert c.trace(kind="fault_applied") == []
    d = c.describe()
    assert d["faults"] == [] and all(b["alive"] for b in d["brokers"])
    with client.Producer({"bootstrap.servers": c.bootstrap, "acks": "all"}) as p:
        topic = c.unique("orders")
        c.create_topic(topic, 1, 3)
        assert p.send(topic, b"x", partition=0).result(10).offset == 0   # acks=all: followers copy again
    _note(test=2, bootstrap=c.bootstrap, topic=topic, group=c.unique("g"), names=[t["name"] for t in d["topics"]])
'''


def _run(pytester, fixture: str, *args: str):
    pytester.makepyfile(test_user_suite=SHARED_SUITE.replace("FIXTURE", fixture))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    seen = [json.loads(line) for line in (pytester.path / "seen.jsonl").read_text().splitlines()]
    return result, sorted(seen, key=lambda s: s["test"])


def test_a_shared_cluster_is_isolated_per_test(pytester):
    result, seen = _run(pytester, "shared_kafka_cluster")
    result.assert_outcomes(passed=2)
    one, two = seen
    assert one["bootstrap"] == two["bootstrap"]                       # the same cluster
    assert one["topic"] != two["topic"] and one["group"] != two["group"]   # names of their own
    assert one["topic"] not in two["names"]                           # the first test's topic was deleted


def test_the_switch_makes_kafka_cluster_shared_and_without_it_each_test_has_its_own(pytester):
    result, seen = _run(pytester, "kafka_cluster", "--broker-emu-shared")
    result.assert_outcomes(passed=2)
    assert seen[0]["bootstrap"] == seen[1]["bootstrap"]
    (pytester.path / "seen.jsonl").unlink()
    result, seen = _run(pytester, "kafka_cluster")
    result.assert_outcomes(passed=2)
    assert seen[0]["bootstrap"] != seen[1]["bootstrap"]


def test_each_xdist_worker_has_its_own_shared_cluster(pytester):
    pytester.makepyfile(test_many='''
import json, os, pathlib
import pytest

@pytest.mark.parametrize("n", range(8))
def test_n(shared_kafka_cluster, n):
    with (pathlib.Path(__file__).parent / "workers.jsonl").open("a") as f:
        f.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], shared_kafka_cluster.bootstrap]) + "\\n")
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=8)
    pairs = {tuple(json.loads(line)) for line in (pytester.path / "workers.jsonl").read_text().splitlines()}
    workers = {w for w, _ in pairs}
    assert len(workers) == 2 and len(pairs) == 2                     # one cluster per worker, kept all along
    assert len({b for _, b in pairs}) == 2


def test_the_factory_starts_clusters_of_any_shape_and_stops_them(kafka_cluster_factory):
    one = kafka_cluster_factory(brokers=1, topics=[("t", 2, 1)])
    three = kafka_cluster_factory(brokers=3, kafka_version="2.8")
    assert len(one.describe()["brokers"]) == 1 and len(three.describe()["brokers"]) == 3
    assert one.bootstrap != three.bootstrap
    with pytest.raises(TypeError, match="no option 'broker'; did you mean 'brokers'"):
        kafka_cluster_factory(broker=1)


@pytest.mark.kafka_cluster(brokers=1, listener="SASL_PLAINTEXT", users={"alice": "s3cret"}, topics=[("t", 1, 1)])
def test_the_marker_gives_a_sasl_listener_with_its_users(kafka_cluster):
    import client

    config = {"bootstrap.servers": kafka_cluster.bootstrap, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "s3cret"}
    with client.Producer(config) as p:
        assert p.send("t", b"x", partition=0).result(10).offset == 0
    assert [e.details["principal"] for e in kafka_cluster.trace(kind="sasl") if e.details.get("step") == "authenticated"]


def test_a_misspelled_marker_option_fails_the_test_in_one_line(pytester):
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.kafka_cluster(topic=[("t", 1, 1)])
def test_x(kafka_cluster):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert re.search(r"kafka_cluster: no option 'topic'; did you mean 'topics'\?", result.stdout.str())
