"""The ``security`` family: timeouts around authentication (docs/security.md). A SASL handshake
that never completes is not a request the client is waiting on: request.timeout.ms plays no
part; socket.connection.setup.timeout.ms does. librdkafka documents it ("TCP connection setup
as well SSL and SASL handshake"); for Java 4.4 this scenario measured it (docs/findings.md)."""

from __future__ import annotations

import math

from conformance import contracts as C
from conformance.model import Contract, Evidence, Scenario, Verdict
from conformance.scenario_defaults import PRODUCE

SASL_BROKER = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret"}
SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
               "sasl.password": "alice-secret"}


def needs_sasl(scenario: Scenario) -> bool:
    return str(scenario.broker_config.get("emu.security.protocol", "PLAINTEXT")).startswith("SASL_")


def stalled_handshakes_abandoned(broker: int) -> Contract:
    """Each connection to ``broker`` whose SaslHandshake the broker never answers is closed by the
    client within the connection setup timeout (base ×0.8 up to the cap ×1.2), and the client
    tries again. Read from the broker's side: each connection's open and the client's close. A
    stalled connection the client ends as it shuts down once the operation failed was not abandoned
    by a timeout and is left out: one closed together with its other connections (within the run's
    slack of their last close), or the last one if it was closed too soon for a setup timeout and
    no sooner than that (franz-go closes its idle connection to the other broker earlier)."""

    def check(ev: Evidence) -> Verdict:
        opened = {e.conn: e.t_ms for e in ev.trace if e.kind == "conn_open" and e.broker == broker}
        stalled = {e.conn for e in ev.trace if e.kind == "recv" and e.broker == broker and e.api == "SaslHandshake"}
        by_client = [e for e in ev.trace if e.kind == "conn_close" and (e.details or {}).get("closed_by") == "client"]
        closed = {e.conn: e.t_ms for e in by_client if e.broker == broker}
        others = [e.t_ms for e in by_client if (e.broker, e.conn) not in {(broker, c) for c in stalled}]
        base = C.expected_ms(ev, "socket.connection.setup.timeout.ms")
        cap = C.expected_ms(ev, "socket.connection.setup.timeout.max.ms")
        low, high = 0.8 * base - ev.slack_ms, 1.2 * cap + ev.slack_ms
        last = max((c for c in stalled if c in opened), key=lambda c: opened[c], default=None)
        last_other = max(others, default=math.nan)   # nan: no other connection closed, no comparison holds

        def shut_down(c: int | None) -> bool:
            if abs(closed[c] - last_other) <= ev.slack_ms:   # closed together with the others
                return True
            too_soon = c == last and closed[c] - opened[c] < low
            return too_soon and not closed[c] < last_other - ev.slack_ms   # the client closed nothing after it

        shut = [c for c in stalled if c in closed and shut_down(c)]
        held = [closed[c] - opened[c] for c in sorted(c for c in stalled if c is not None)
                if c in closed and c in opened and c not in shut]
        figure = f"{len(stalled)} stalled handshake(s); abandoned after " + (", ".join(f"{h / 1000:.1f} s" for h in held) or "—")
        figure += f" ({len(shut)} closed as the client shut down)" if shut else ""
        if not stalled:
            return Verdict(False, figure, f"no SaslHandshake reached broker {broker}")
        if not held:
            return Verdict(False, figure, "the client never abandoned the stalled handshake: it waited until the "
                                          "operation's own deadline (the setup timeout does not cover authentication)")
        late = [h for h in held if not low <= h <= high]
        if late:
            return Verdict(False, figure, f"a stalled handshake was held {late[0]:.0f} ms, expected {low:.0f}..{high:.0f} ms")
        first_abandoned = min(closed[c] for c in stalled if c in closed and c not in shut)
        if not any(opened.get(c, -1.0) >= first_abandoned for c in stalled):
            # trying again is a new handshake after the first abandoned one, whether the setup
            # timeout or the client's shutdown ended it (Java's grows past what is left)
            return Verdict(False, figure, "the client did not try again after abandoning the handshake")
        return Verdict(True, figure)

    return Contract("a stalled SASL handshake is abandoned at the connection setup timeout", check, side="server")



SECURITY_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="security.sasl-handshake-stall",
        family="Security",
        title="The leader never answers SaslHandshake: which client-side timeout gives up on the connection?",
        teaching=("The listener needs SASL and the leader takes the client's SaslHandshake and never answers. No "
                  "Kafka request is in flight, so request.timeout.ms plays no part: the connection setup timeout "
                  "(socket.connection.setup.timeout.ms, 30 s here) abandons the handshake and the client reconnects "
                  "(Java doubles the timeout each attempt, up to 60 s here). The record fails at delivery.timeout.ms, "
                  "never sent."),
        references=("KIP-152", "KIP-601", "KIP-91"),
        steps=(PRODUCE,),
        broker_config=SASL_BROKER,
        faults=({"match": {"broker": 1, "api": "SaslHandshake"}, "action": "black_hole"},),
        client_config={**SASL_CLIENT, "request.timeout.ms": 30_000, "delivery.timeout.ms": 120_000, "acks": "all",
                       # librdkafka refuses a setup timeout below 1 s: 30 s, scaled by 30 in real-time runs
                       "socket.connection.setup.timeout.ms": 30_000, "socket.connection.setup.timeout.max.ms": 60_000,
                       "reconnect.backoff.max.ms": 1_000},
        bootstrap_brokers=(0,),
        not_on_kafka="the broker needs a SASL listener and a fault on its handshake",
        needs=("socket.connection.setup.timeout.ms",),
        contracts=(C.outcome_is("produce", error="TimeoutException"),
                   C.returns_within("produce", "delivery.timeout.ms", early_ms=100, late_fraction=0.1),
                   stalled_handshakes_abandoned(1)),
    ),
)
