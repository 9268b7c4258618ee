"""One name per client on every command line (conformance, explain, campaign matrices, chaos):
the short names `ours` and `ours-blocking` for our client's two faces, and each third-party
client's own name. Reports and traces show the adapters' display names ("broker-emu (async)");
those are accepted on the command line too, with a one-line note naming the short one.
"""

from __future__ import annotations

import sys

# the display name each short name stands for
ALIASES = {"ours": "broker-emu (async)", "ours-blocking": "broker-emu (blocking)",
           "confluent": "confluent-kafka", "librdkafka": "confluent-kafka"}
SHORT = {"broker-emu (async)": "ours", "broker-emu (blocking)": "ours-blocking"}


def adapter_name(name: str, note: bool = True) -> str:
    """The adapter a command-line name means (its display name); an old spelling is noted once."""
    if note and name in SHORT:
        print(f"note: {name!r} is spelled {SHORT[name]!r} on the command line now (the old spelling still works)",
              file=sys.stderr)
    return ALIASES.get(name, name)


def cli_name(adapter: str) -> str:
    """The short name to type for an adapter's display name."""
    return SHORT.get(adapter, adapter)
