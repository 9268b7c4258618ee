"""Other brokers behind the real-client tests' ``cluster`` fixture (``pytest --broker NAME``):
franz-go's kfake (``KfakeCluster``, adapters/go/kfake in the cache, built by dev/build-adapters/go)
and Apache Kafka itself, directly or through ``broker-emu proxy`` (``KafkaTestCluster``,
conformance/realkafka, installed by dev/install-kafka).

    .venv/bin/python -m pytest --broker kfake tests/realclients         # the tests marked any_broker
    .venv/bin/python -m pytest --broker kafka tests/realclients         # a 3-node Kafka per test
    .venv/bin/python -m pytest --broker kafka-proxy tests/realclients   # the same, through the proxy

Each offers what the emulator's fixture offers the tests: ``bootstrap``, and ``call(fn)`` with
``cluster.topics[name].partitions`` (``index``, ``log_end_offset``) and
``cluster.create_topic``, over the wire (ListOffsets and CreateTopics through confluent-kafka).
Tests that read the emulator's trace or inject faults have no equivalent: they are not marked
any_broker and do not run under these options.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any, Callable

from conformance.kfake_upstream import kfake_binary


@dataclass
class _Partition:
    index: int
    log_end_offset: int


class _Topic:
    def __init__(self, cluster: WireCluster, name: str) -> None:
        self._cluster, self._name = cluster, name

    @property
    def partitions(self) -> list[_Partition]:
        return self._cluster.log_end_offsets(self._name)


class _Topics:
    def __init__(self, cluster: WireCluster) -> None:
        self._cluster = cluster

    def __getitem__(self, name: str) -> _Topic:
        return _Topic(self._cluster, name)


class WireCluster:
    """What the tests' ``cluster`` fixture offers, for a broker we reach only over the wire."""

    bootstrap: str

    def __init__(self) -> None:
        self.cluster = self          # the tests read cluster.cluster.topics[...]
        self.topics = _Topics(self)

    def call(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def log_end_offsets(self, topic: str) -> list[_Partition]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kfake-cluster-probe"})
        try:
            meta = c.list_topics(topic, timeout=10).topics[topic]
            return [_Partition(p, c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
                    for p in sorted(meta.partitions)]
        finally:
            c.close()

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> None:
        """As the emulator's ``Cluster.create_topic``, over the wire (CreateTopics)."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topic = NewTopic(name, partitions or 1, replication_factor or -1, config=configs or {})
        admin.create_topics([topic], operation_timeout=10)[name].result(15)

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> WireCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KfakeCluster(WireCluster):
    """A kfake process: ``with KfakeCluster() as kf: kf.bootstrap``."""

    def __init__(self, brokers: int = 3, topics: tuple[tuple[str, int], ...] = (("t", 3),),
                 extra_args: tuple[str, ...] = ()) -> None:
        kfake = kfake_binary()
        if not kfake.is_file():
            raise FileNotFoundError(f"{kfake} is not built (bash dev/build-adapters/go)")
        args = [str(kfake), "-brokers", str(brokers), *extra_args]
        for name, partitions in topics:
            args += ["-topic", f"{name}:{partitions}"]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("bootstrap="):
            self.close()
            raise RuntimeError(f"kfake did not start: {line!r}")
        self.bootstrap = line.split("=", 1)[1]
        super().__init__()

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()           # kfake stops when its stdin closes
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()



class KafkaTestCluster(WireCluster):
    """Apache Kafka itself (conformance/realkafka: 3 KRaft nodes, topic t with 3 partitions,
    RF 3), reached directly or through ``broker-emu proxy`` (``proxied``)."""

    def __init__(self, proxied: bool = False) -> None:
        from conformance.realkafka.cluster import KafkaCluster
        from conformance.realkafka.config import HARNESS

        self._kafka = KafkaCluster(brokers=3, config=HARNESS).start()
        self._proxy: Any = None
        try:
            self._kafka.create_topic("t", partitions=3, replication_factor=3)
            self.bootstrap = self._kafka.bootstrap
            if proxied:
                from broker_emu.proxy.proxy import run_proxy_in_thread

                self._proxy_cm = run_proxy_in_thread(self._kafka.bootstrap)
                self._proxy = self._proxy_cm.__enter__()
                self.bootstrap = self._proxy.bootstrap
        except BaseException:
            self._kafka.stop()
            raise
        super().__init__()

    def close(self) -> None:
        try:
            if self._proxy is not None:
                self._proxy_cm.__exit__(None, None, None)
        finally:
            self._kafka.stop()
