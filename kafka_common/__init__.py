"""What the emulator and the client both need and neither may take from the other: the one home
of each such idea (docs/architecture.md).

The emulator (``broker_emu``) may import only the wire codec and the error table of the client
package, so anything else both sides use lives here rather than twice: the range assignor
(``assignors``: the classic consumer's and KIP-848's server-side ``range``), the loop's "sleep
until the next deadline or a wake-up" (``wakeup``), one trio run on a daemon thread
(``trio_thread``) and the wall clock of Kafka's timestamps (``wallclock``). A leaf: it imports
nothing of ``broker_emu``, ``client`` or ``conformance`` (tests/structure/test_layers.py), and
nothing here is wire knowledge (that is ``client.protocol``).
"""
