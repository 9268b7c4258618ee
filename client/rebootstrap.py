"""When the client goes back to bootstrap.servers (KIP-899, KIP-1102), sans-io: every method
takes ``now`` (trio's clock, seconds).

Java's rules (``NetworkClient.DefaultMetadataUpdater``, Kafka 4.x), followed here:

- ``metadata.recovery.strategy``: ``rebootstrap`` (the default since Kafka 4.0) or ``none``
  (the old behaviour: once the first answer named the brokers, only they are ever asked).
- A metadata attempt starts when a refresh is wanted and none is outstanding
  (``metadataAttemptStartMs``); an answer that names brokers ends it. An answer that names no
  broker is ignored, as Java's ``handleSuccessfulResponse`` ignores it: the attempt goes on.
- When more than ``metadata.recovery.rebootstrap.trigger.ms`` has passed since the attempt
  started (Java compares whole milliseconds with ``>``: the first millisecond after it), the
  client rebootstraps: it closes its connections to the brokers it knows, forgets them, asks the
  bootstrap addresses again, and counts a new attempt from then.
- A Metadata v13+ answer whose top-level error is REBOOTSTRAP_REQUIRED makes it rebootstrap at
  once (``initiateRebootstrap``); with strategy ``none`` that answer is only an empty one.

``NetworkClient.rebootstrap`` does the forgetting; this module only decides when, and says why
in words an operator can act on (which brokers, since when, what happens next).
"""

from __future__ import annotations

import math

STRATEGIES = ("none", "rebootstrap")
TRIGGER = "metadata.recovery.rebootstrap.trigger.ms"
ONE_MS = 0.001   # Java's ``now - start > triggerMs`` on whole milliseconds


class RebootstrapClock:
    """Java's ``metadataAttemptStartMs`` and the decision made from it."""

    def __init__(self, strategy: str, trigger_ms: int):
        self.enabled = strategy == "rebootstrap"
        self.strategy = strategy
        self.trigger_ms = trigger_ms
        self.since: float | None = None   # when the current metadata attempt started; None: none

    def attempting(self, now: float) -> bool:
        """A refresh is wanted now; True if that starts a new attempt."""
        if self.since is None:
            self.since = now
            return True
        return False

    def succeeded(self) -> None:
        self.since = None

    def server_asked(self) -> None:
        """REBOOTSTRAP_REQUIRED: due at once (Java's ``initiateRebootstrap`` sets the start to 0)."""
        self.since = -math.inf

    def rebootstrapped(self, now: float) -> None:
        self.since = now

    def due_at(self) -> float:
        """When the client rebootstraps if nothing answers before (``inf``: never)."""
        if not self.enabled or self.since is None:
            return math.inf
        return self.since + self.trigger_ms / 1000 + ONE_MS

    def needs(self, now: float) -> bool:
        return now >= self.due_at()

    def describe(self, now: float, known: str, bootstrap: str) -> str:
        """What is going on, for an error message: since when, and what the client does next."""
        if self.since is None or self.since == -math.inf:
            return ""
        waited = f"no usable Metadata answer from {known or 'any broker'} for {(now - self.since) * 1000:.0f} ms"
        if not self.enabled:
            return (f"{waited}; metadata.recovery.strategy=none: the client keeps asking them and never goes "
                    f"back to bootstrap.servers ({bootstrap})")
        return (f"{waited}; it goes back to bootstrap.servers ({bootstrap}) when {TRIGGER}={self.trigger_ms} "
                f"has passed, at {self.due_at():.3f} s")

    def reason(self, now: float, known: str, bootstrap: str) -> str:
        """Why the client rebootstraps now."""
        if self.since == -math.inf:
            return f"a broker answered REBOOTSTRAP_REQUIRED: forgetting {known or 'no broker'}, asking bootstrap.servers ({bootstrap})"
        elapsed = (now - (self.since or now)) * 1000
        return (f"no usable Metadata answer from {known or 'any broker'} since {self.since:.3f} s ({elapsed:.0f} ms > "
                f"{TRIGGER}={self.trigger_ms}): forgetting them, asking bootstrap.servers ({bootstrap}) (KIP-1102)")
