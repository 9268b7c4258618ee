"""Real third-party clients: the helper that decides what a missing client means."""

from __future__ import annotations

import os

import pytest

from .clients import installed_version


def require_client(name: str) -> str:
    """Return the installed version of client ``name``; if it is missing, fail under CI
    (``CI=true``) and skip elsewhere.

    CI must exercise every client (a green run that skipped them all would prove nothing), while
    a developer without apt or npm can still run the rest of the suite.
    """
    version = installed_version(name)
    if version is not None:
        return version
    reason = f"{name} is not installed (run: bash dev/install-clients)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
