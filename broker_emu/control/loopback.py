"""Whether a host name is loopback: `serve` asks before it starts anything (what it refuses to
expose without an opt-in), so this lives apart from the HTTP server, which a cluster without a
control API never loads."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
