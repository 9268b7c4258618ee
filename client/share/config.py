"""The share consumer's configuration: the consumer's names and defaults, less what Java's
``ShareConsumerConfig`` refuses for a share group (the broker owns the assignment, the session and
where a share partition starts; there is no offset to commit), plus ``share.acknowledgement.mode``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client.config import CONSUMER, ConfigException, consumer_config

# ShareConsumerConfig.SHARE_GROUP_UNSUPPORTED_CONFIGS
UNSUPPORTED = ("auto.offset.reset", "enable.auto.commit", "group.instance.id", "isolation.level",
               "partition.assignment.strategy", "interceptor.classes", "session.timeout.ms",
               "heartbeat.interval.ms", "group.protocol", "group.remote.assignor")
MODES = ("implicit", "explicit")
SHARE_ONLY: dict[str, Any] = {"share.acknowledgement.mode": "implicit"}


def share_consumer_config(given: Mapping[str, Any]) -> dict[str, Any]:
    refused = sorted(k for k in given if k in UNSUPPORTED)
    if refused:
        # Java's words: "The following configurations are not supported for share consumer: ..."
        raise ConfigException(f"The following configurations are not supported for share consumer: {', '.join(refused)} "
                              "(a share group's broker owns them)")
    unknown = sorted(set(given) - set(CONSUMER) - set(SHARE_ONLY))
    if unknown:
        raise ConfigException(f"unknown configuration {', '.join(unknown)} (known: "
                              f"{', '.join(sorted(set(CONSUMER) - set(UNSUPPORTED) | set(SHARE_ONLY)))})")
    config = consumer_config({k: v for k, v in given.items() if k not in SHARE_ONLY})
    mode = str(given.get("share.acknowledgement.mode", "implicit")).lower()
    if mode not in MODES:
        raise ConfigException(f"Invalid value {given['share.acknowledgement.mode']!r} for configuration "
                              "share.acknowledgement.mode: String must be one of: implicit, explicit")
    config["share.acknowledgement.mode"] = mode
    if not config["group.id"]:
        raise ConfigException("You must provide a valid group.id in the consumer configuration.")
    return config
