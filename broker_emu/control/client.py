"""A blocking client of the control API (what `broker-emu fault ...` uses), and how serve and proxy
announce the API (the URL the client needs)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

CONTROL_ENV = "BROKER_EMU_CONTROL"   # where `broker-emu fault` finds the control API without --control
DEFAULT_CONTROL = "http://127.0.0.1:9080"


def announce(url: str) -> None:
    """What serve and proxy print once their control API listens: its URL, the web console's, and a
    line to paste into a shell so that `broker-emu fault` finds the API."""
    print(f"control={url}", flush=True)
    print(f"console={url}/console", flush=True)
    print(f"export {CONTROL_ENV}={url}", flush=True)


class ControlError(RuntimeError):
    def __init__(self, status: int, body: Any):
        self.status, self.body = status, body
        message = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"control API answered {status}: {message}")


def call(base_url: str, method: str, path: str, body: Any = None, token: str | None = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base_url.rstrip("/") + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = resp.read().decode()
            ctype = resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        raw = exc.read().decode()
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = raw
        raise ControlError(exc.code, parsed) from None
    if "ndjson" in ctype:
        return [json.loads(line) for line in payload.splitlines() if line]
    return json.loads(payload) if payload else None


def control_url(given: str | None) -> str:
    """The control API to use: ``given`` (--control, before or after the action), else
    $BROKER_EMU_CONTROL (what serve prints an export line for), else the default."""
    import os

    return given or os.environ.get(CONTROL_ENV) or DEFAULT_CONTROL
