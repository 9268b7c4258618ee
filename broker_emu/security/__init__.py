"""Listener security: TLS wraps the stream (``tls.py``), SASL is a connection state the pipeline
consults before it admits other APIs (``session.py``, asked by ``broker_emu/sasl_gate.py``), and
the authorizer (``acls.py``) is asked before a handler runs (``broker_emu/acl_enforcement.py``).
A cluster's settings of all three are ``settings.Security``."""
