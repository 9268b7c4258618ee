"""The version of each client as its pin says: pyproject.toml (our own, and the Python clients of the
``clients`` extra), package.json (kafkajs), conformance/adapters/go/go.mod (the Go modules), the
Java adapter's pom.xml (a Maven property)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from conformance.client_capabilities import Pin

ROOT = Path(__file__).resolve().parents[2]


def pinned_version(pin: Pin, root: Path = ROOT) -> str:
    if pin.version:
        return pin.version
    text = (root / pin.file).read_text(encoding="utf-8")
    name = Path(pin.file).name
    found: str | None = None
    if name == "pyproject.toml":
        found = _python(tomllib.loads(text), pin.name)
    elif name == "package.json":
        found = json.loads(text).get("dependencies", {}).get(pin.name)
    elif name == "go.mod":
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(pin.name)}\s+(v\S+)", text, re.M)
        found = match[1] if match else None
    elif name == "pom.xml":
        match = re.search(rf"<{re.escape(pin.name)}>([^<]+)</{re.escape(pin.name)}>", text)
        found = match[1].strip() if match else None
    if not found:
        raise LookupError(f"{pin.file} pins no {pin.name}")
    return found


def _python(project: dict, name: str) -> str | None:
    meta = project.get("project", {})
    if meta.get("name") == name:
        return meta.get("version")
    for requirements in meta.get("optional-dependencies", {}).values():
        for requirement in requirements:
            match = re.fullmatch(rf"{re.escape(name)}\s*==\s*(\S+)", requirement.strip())
            if match:
                return match[1]
    return None
