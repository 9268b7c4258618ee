"""Our client's capabilities (conformance/capabilities), for the adapters of its two faces in
conformance/adapters/ours.py. The client has every capability of the table; the blocking faces
run in real time, so no in-memory connections, and the ours-blocking adapter does not drive every
call the blocking faces have yet (``not_driven``: each names the call it would use)."""

from __future__ import annotations

from types import MappingProxyType

from conformance.capabilities import NAMES, ClientCapabilities, Lack, Pin

PIN = Pin("pyproject.toml", "broker-emu")
SOURCE = "../{path}"      # our own files, from docs/

OURS_ASYNC = ClientCapabilities(client="broker-emu (async)", pin=PIN, source=SOURCE, has=NAMES, lacks=MappingProxyType({}),
                                notes=MappingProxyType({
                                    "in-memory connections": "open_producer / open_consumer take a connect function "
                                                             "(client/transport.py); the adapter hands them the "
                                                             "emulator's in-memory connections"}))

_BLOCKING_ADAPTER = "the ours-blocking adapter (conformance/adapters/ours.py OurBlockingAdapter)"

OURS_BLOCKING = ClientCapabilities(
    client="broker-emu (blocking)", pin=PIN, source=SOURCE,
    has=tuple(n for n in NAMES if n != "in-memory connections"),
    lacks=MappingProxyType({
        "in-memory connections": Lack(
            "the blocking faces (client.Producer, client.Consumer) run their network on a trio thread of their own, "
            "in real time (client/trio_thread.py): in the matrix they meet the emulator over loopback TCP, not "
            "through the in-memory connections of a virtual-time run", "client/trio_thread.py"),
    }),
    not_driven=MappingProxyType({
        "configure_producer": f"{_BLOCKING_ADAPTER} has no configure_producer step yet (client.Producer(config) "
                              "refuses a config: client/producer/blocking.py Producer.__init__)",
        "produce_pipelined": f"{_BLOCKING_ADAPTER} has no produce_pipelined step yet (client.Producer.send returns a "
                             "future: client/producer/blocking.py Producer.send)",
        "transactions": f"{_BLOCKING_ADAPTER} has no transactional steps yet (client/producer/blocking.py "
                        "Producer.init_transactions, begin_transaction, commit_transaction)",
        "KIP-848": f"{_BLOCKING_ADAPTER} has no kip848_* steps yet (client.Consumer takes group.protocol=consumer: "
                   "client/config.py)",
        "create_topics(timeout)": f"{_BLOCKING_ADAPTER} has no create_topics step yet (client/admin_blocking.py Admin)",
        "delete_records(timeout)": f"{_BLOCKING_ADAPTER} has no delete_records step yet (client/admin_blocking.py Admin)",
        "SASL": f"{_BLOCKING_ADAPTER} does not pass the scenario's SASL settings to its client yet (client/config.py "
                "takes security.protocol and sasl.*)",
    }),
)
