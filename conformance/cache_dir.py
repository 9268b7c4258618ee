"""Where broker-emu keeps what it downloads and builds (adapter programs, Apache Kafka's jars,
Maven's and Go's downloads, pinned client releases): one folder, whatever the current directory.

- ``$BROKER_EMU_CACHE`` when set;
- else, when this package runs from a source checkout (its parent folder holds the
  ``pyproject.toml`` of broker-emu), that checkout's ``.cache`` — where ``dev/`` scripts put them;
- else the user's cache folder: ``$XDG_CACHE_HOME/broker-emu``, by default ``~/.cache/broker-emu``.

The ``dev/`` scripts follow the same rule (``BROKER_EMU_CACHE``, else the checkout's ``.cache``).
An installed package has no ``dev/`` folder: ``install_hint`` says so instead of naming a script
that is not there.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ENV = "BROKER_EMU_CACHE"
PROJECT = "broker-emu"
README_SECTION = "README.md, 'Installing the package'"
_PACKAGE_DIR = Path(__file__).resolve().parent


def source_checkout(package_dir: Path | None = None) -> Path | None:
    """The checkout this package runs from, or None when it is installed (site-packages)."""
    root = (package_dir or _PACKAGE_DIR).parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return root if isinstance(project, dict) and project.get("name") == PROJECT else None


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/broker-emu`` (an absolute XDG_CACHE_HOME only, as the spec says), else
    ``~/.cache/broker-emu``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / PROJECT


def cache_dir(*parts: str) -> Path:
    """The cache folder (resolved on every call: the environment may change), joined with ``parts``."""
    override = os.environ.get(ENV)
    if override:
        base = Path(override).expanduser()
    else:
        checkout = source_checkout()
        base = checkout / ".cache" if checkout is not None else user_cache_dir()
    return base.joinpath(*parts)


def install_hint(script: str) -> str:
    """How to install a missing piece that the ``dev/`` script ``script`` (e.g.
    ``dev/build-adapters/go``) installs: the command in a checkout, and in an installed package
    (no ``dev/`` there) where to read how."""
    if source_checkout() is not None:
        return f"bash {script}"
    return (f"{script} is in broker-emu's source checkout, not in the installed package ({README_SECTION}); "
            f"from a checkout: {ENV}={cache_dir()} bash {script}")
