"""A real browser on the web console, for tests and screenshots: ``tools/console/driver.js``
(playwright-core, pinned in package.json, driving Debian's Chromium) commanded line by line.

    with ConsoleBrowser("http://127.0.0.1:PORT/console") as b:
        b.click('[data-testid="quick-black-hole-produce"]')
        b.wait('[data-testid="faults"] tbody tr')
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class BrowserUnavailable(RuntimeError):
    pass


def check_available() -> None:
    if shutil.which("node") is None:
        raise BrowserUnavailable("node not found (the console's browser tests run playwright-core on Node.js)")
    if not (ROOT / "node_modules" / "playwright-core" / "package.json").exists():
        raise BrowserUnavailable("playwright-core is not installed (bash dev/install-clients runs npm ci)")
    if not Path("/usr/lib/chromium/chromium").exists():
        raise BrowserUnavailable("Chromium not found (Debian: apt-get install chromium; dev/install-clients does it)")


class ConsoleBrowser:
    def __init__(self, url: str):
        check_available()
        self.proc = subprocess.Popen(["node", str(ROOT / "tools" / "console" / "driver.js"), url], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._next = 1
        ready = self._read()
        if not ready.get("ok"):
            raise BrowserUnavailable(f"the browser did not start: {ready.get('error')}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"the browser driver exited: {err[-2000:]}")
        return json.loads(line)

    def cmd(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None
        cid = self._next
        self._next += 1
        self.proc.stdin.write(json.dumps({"id": cid, "op": op, **args}) + "\n")
        self.proc.stdin.flush()
        answer = self._read()
        if not answer.get("ok"):
            raise AssertionError(f"browser {op} {args}: {answer.get('error')}")
        return answer.get("value")

    def click(self, selector: str, **kw: Any) -> None:
        self.cmd("click", selector=selector, **kw)

    def fill(self, selector: str, value: str) -> None:
        self.cmd("fill", selector=selector, value=value)

    def select(self, selector: str, value: str) -> None:
        self.cmd("select", selector=selector, value=value)

    def text(self, selector: str) -> str:
        return self.cmd("text", selector=selector) or ""

    def count(self, selector: str) -> int:
        return int(self.cmd("count", selector=selector))

    def wait(self, selector: str, state: str = "visible", text: str | None = None, timeout_ms: int = 15000) -> None:
        args: dict[str, Any] = {"selector": selector, "state": state, "timeout_ms": timeout_ms}
        if text is not None:
            args["text"] = text
        self.cmd("wait", **args)

    def screenshot(self, path: str | Path, selector: str | None = None) -> None:
        self.cmd("screenshot", path=str(path), **({"selector": selector} if selector else {}))

    def wait_until(self, check: Any, what: str, timeout_s: float = 15.0) -> None:
        """Poll ``check()`` (which may read the page) until it is true."""
        import time

        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"the console never showed {what} within {timeout_s} s")
            time.sleep(0.1)

    def errors(self) -> list[str]:
        return list(self.cmd("errors") or [])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.cmd("quit")
            except (AssertionError, RuntimeError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> ConsoleBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
