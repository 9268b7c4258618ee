"""Kafka's rules for a topic's name (``org.apache.kafka.common.internals.Topic.validate``), with
its messages: the one home for every handler and the cluster that checks a name."""

from __future__ import annotations

import re

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Kafka 4.x's ``Topic.validate``, with its messages (InvalidTopicException)."""
    why = ("the empty string is not allowed" if not name else f"'{name}' is not allowed" if name in (".", "..")
           else f"the length of '{name}' is longer than the max allowed length 249" if len(name) > 249
           else None if _LEGAL.fullmatch(name)
           else f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    if why is not None:
        raise ValueError(f"Topic name is invalid: {why}")
