"""The console's snapshot of a proxy: its brokers and the connections through it (a proxy has no
purgatory of its own: the upstream's answers decide)."""

from __future__ import annotations

import client
from broker_emu.control.console_state import console_state


def test_the_proxys_console_snapshot_lists_its_brokers_and_connections(proxy):
    with client.Producer({"bootstrap.servers": proxy.bootstrap, "client.id": "through-the-proxy"}) as p:
        p.send("t", b"x", partition=0).result(20)
        state = proxy.call(lambda: console_state(proxy.cluster))
    assert len(state["brokers"]) == 3 and state["purgatory_ops"] == []
    assert "through-the-proxy" in {c["client_id"] for c in state["connections"]}
