"""Run each real client once per scenario per test session, and keep what it sent.

Scenarios (each a fresh ``CaptureListener`` and a fresh client process):

- ``silent``: nobody answers; the client gives up after its own short timeouts. Shows what a
  client sends first, before any negotiation.
- ``produce``: ``SingleBroker`` answers; the client produces one record with acks=1 and should
  see it acknowledged.
- ``fallback``: as ``produce``, but ApiVersions is only served at v0, so every client that
  starts higher shows how it falls back.
- ``no-fetch``: as ``produce``, but ApiVersions advertises only ApiVersions, Metadata and
  Produce, which makes librdkafka fall back to the old message format.

Both ``tests/realclients`` and ``tests/client/protocol/test_captured_frames.py`` read these sessions;
the cache means each client runs once per scenario however many tests look at it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .capture import CaptureListener, Frame
from .clients import ChildRun, require_client, run_client
from .responder import ANSWERED, SingleBroker

TOPIC = "emu-captures"
SCENARIOS = ("silent", "produce", "fallback", "no-fetch")


def client_id(client: str) -> str:
    return f"emu-rc-{client}"


def value(client: str, scenario: str) -> str:
    return f"{scenario} record from {client}"


@dataclass(frozen=True)
class Session:
    client: str
    version: str
    scenario: str
    frames: tuple[Frame, ...]
    run: ChildRun
    unhandled: tuple[Frame, ...]
    harness_errors: tuple[str, ...]

    @property
    def client_id(self) -> str:
        return client_id(self.client)

    @property
    def value(self) -> str:
        return value(self.client, self.scenario)

    def on_connection(self, index: int) -> list[Frame]:
        return [f for f in self.frames if f.connection == index]

    def describe(self) -> str:
        """For assertion messages: what the client sent and said."""
        lines = [f"{self.client} {self.version} ({self.scenario}): {self.run.result}"]
        lines += [f"  {f!r}" for f in self.frames]
        lines += [f"  harness: {e}" for e in self.harness_errors]
        lines.append(f"  stderr: {self.run.stderr[-800:]}")
        return "\n".join(lines)


_cache: dict[tuple[str, str], Session] = {}


def session(client: str, scenario: str) -> Session:
    """The captured session; skips (or fails under CI) when the client is not installed."""
    version = require_client(client)
    key = (client, scenario)
    if key not in _cache:
        _cache[key] = _run(client, version, scenario)
    return _cache[key]


def _run(client: str, version: str, scenario: str) -> Session:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    broker: list[SingleBroker] = []

    def respond(frame: Frame) -> bytes | None:
        return broker[0](frame) if broker else None

    with CaptureListener(None if scenario == "silent" else respond) as listener:
        if scenario != "silent":
            broker.append(_broker(listener.port, scenario))
        mode = "first" if scenario == "silent" else "produce"
        run = run_client(client, listener.port, TOPIC, client_id(client), value(client, scenario), mode)
    unhandled = tuple(broker[0].unhandled) if broker else ()
    return Session(client, version, scenario, tuple(listener.frames), run, unhandled, tuple(listener.errors))


def _broker(port: int, scenario: str) -> SingleBroker:
    if scenario == "fallback":
        return SingleBroker(port, TOPIC, api_versions_max=0)
    if scenario == "no-fetch":
        return SingleBroker(port, TOPIC, advertise=ANSWERED)
    return SingleBroker(port, TOPIC)
