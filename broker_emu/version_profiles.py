"""Version profiles: the emulator advertising what an older Kafka release's broker did
(``emu.kafka.version`` 2.8, 3.6, 3.9 or 4.1; "" is the emulator as it is, Kafka 4.4's ranges
where it serves them) and per-API caps (``emu.api.max.versions``: ``Produce=8,Fetch=11``).

A profile narrows each API to the release's range (version_profiles_data.py, generated from that
release's message schemas) and drops the APIs the release's broker did not serve; it never adds
what the emulator does not serve. Behaviour that changed with the release:
- 2.8 is a ZooKeeper-mode broker: CreateTopics applies the change and then waits for it to spread,
  answering REQUEST_TIMED_OUT at ``timeout_ms`` while the topic exists (ZkAdminManager,
  DelayedCreatePartitions); KRaft releases fail the request at the controller's deadline and change
  nothing (handlers/controller_deadline.py).
- Features (ApiVersions v3+): a release from 4.0 advertises ``transaction.version`` (supported 0-2,
  finalized at the cluster's ``transaction.version``, 2 for a new cluster); earlier profiles
  advertise none, and their EndTxn (v4 at most) and Produce (v11 at most) cannot ask for version 2.
- KIP-848 groups follow the APIs: 2.8 and 3.6 serve no ConsumerGroupHeartbeat, 3.9 its preview v0.
- Message formats: up to 3.9 a Produce v0-2 carries a magic 0/1 message set, which the broker
  converts to a magic-2 batch; Kafka 4.x still advertises Produce v0-2 (for librdkafka,
  KAFKA-18659) but closes the connection on one (measured on Kafka 4.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker_emu.version_profiles_data import RANGES, RELEASES
from client.protocol import ApiKey

PROFILES = tuple(RELEASES)
ZOOKEEPER_PROFILES = frozenset({"2.8"})
LEGACY_PRODUCE_PROFILES = frozenset({"2.8", "3.6", "3.9"})   # Produce v0-2 and message formats v0/v1
# releases before 4.0 (KIP-890 part 2's transaction.version 2 came with 4.0): no features advertised
PRE_TRANSACTION_V2_PROFILES = frozenset({"2.8", "3.6", "3.9"})
TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2   # TransactionVersion.TV_2, the highest level Kafka 4.4 supports
BY_NAME = {k.api_name: int(k) for k in ApiKey}


class ProfileError(ValueError):
    pass


def parse_caps(spec: str) -> dict[int, int]:
    """``Produce=8,Fetch=11`` -> {0: 8, 1: 11}."""
    caps: dict[int, int] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in BY_NAME or not value.strip().lstrip("-").isdigit():
            raise ProfileError(f"emu.api.max.versions: expected ApiName=version (e.g. Produce=8), got {item!r}")
        caps[BY_NAME[name.strip()]] = int(value)
    return caps


class VersionProfile:
    def __init__(self, config: Mapping[str, Any]):
        self.release: str = config["emu.kafka.version"]
        if self.release and self.release not in RANGES:
            raise ProfileError(f"emu.kafka.version must be one of {', '.join(PROFILES)} (or empty), got {self.release!r}")
        self.ranges = RANGES.get(self.release)
        self.caps = parse_caps(config["emu.api.max.versions"])

    @property
    def zookeeper(self) -> bool:
        return self.release in ZOOKEEPER_PROFILES

    @property
    def legacy_produce(self) -> bool:
        """Produce v0-2 served (their magic 0/1 message sets converted), as before Kafka 4.0."""
        return self.release in LEGACY_PRODUCE_PROFILES

    @property
    def advertises_features(self) -> bool:
        """Whether ApiVersions carries the transaction.version feature (releases from 4.0)."""
        return self.release not in PRE_TRANSACTION_V2_PROFILES

    def narrow(self, api_key: int, served: tuple[int, int]) -> tuple[int, int] | None:
        """What the emulator serves of ``api_key`` within the profile and the caps; None: not at all."""
        lo, hi = served
        if self.ranges is not None:
            release = self.ranges.get(api_key)
            if release is None:
                return None
            lo, hi = max(lo, release[0]), min(hi, release[1])
        if api_key in self.caps:
            hi = min(hi, self.caps[api_key])
        return (lo, hi) if lo <= hi else None
