"""Listener security: TLS wraps the stream (``tls.py``), SASL is a connection state the pipeline
consults before it admits other APIs (``session.py``, asked by ``broker_emu/sasl_gate.py``), and
the authorizer (``acls.py``) is asked before a handler runs (``broker_emu/acl_enforcement.py``).
A cluster's settings of all three are ``settings.Security``."""

# Only for broker_emu/cluster.py, which imports these from here: settings imports the mechanisms,
# which import their siblings, so this re-export puts the package in an import cycle (tolerated,
# by name, in tests/structure/test_layers.py). Once cluster.py imports broker_emu.security.settings,
# delete it.
from broker_emu.security.settings import Security, SecurityError

__all__ = ["Security", "SecurityError"]
