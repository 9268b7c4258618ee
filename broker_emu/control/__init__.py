"""The live control plane: HTTP+JSON on loopback, and the CLI that talks to it."""

from broker_emu.control.http import serve_http
from broker_emu.control.routes import ControlTarget, Routes

__all__ = ["ControlTarget", "Routes", "serve_http"]
