"""Client versions as a campaign parameter: ``confluent-kafka@2.12.0`` or ``kafka-python@2.0.2``
in a matrix's ``clients`` runs that client's adapter against that release, so a regression between
releases shows up as a difference in the heat maps.

Each version is installed once, with pip, into a folder of its own under
``client-versions/`` in the cache (conformance/cache_dir.py; ``pip install --target``, no dependencies: the Python clients
bring their native parts in their wheels, and their few dependencies are already in the project's
environment); the run's child process (campaign/isolated.py) puts that folder first on its path,
so it imports that release and nothing else changes. Only the Python clients can be versioned this
way; the others are installed by dev/install-clients at one pinned version.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conformance.cache_dir import cache_dir

ROOT = Path(__file__).resolve().parents[2]
# adapter name -> (PyPI project, import name)
PACKAGES = {"confluent-kafka": ("confluent-kafka", "confluent_kafka"), "kafka-python": ("kafka-python", "kafka"),
            "aiokafka": ("aiokafka", "aiokafka")}
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+-]*")


class ClientVersionError(ValueError):
    pass


def split(spec: str) -> tuple[str, str | None]:
    """``confluent-kafka@2.12.0`` -> ("confluent-kafka", "2.12.0"); a plain name -> (name, None)."""
    name, sep, version = spec.partition("@")
    return name, (version if sep else None)


def check(spec: str) -> None:
    name, version = split(spec)
    if version is None:
        return
    if name not in PACKAGES:
        raise ClientVersionError(f"{spec}: only {', '.join(sorted(PACKAGES))} can be pinned to a version in a campaign")
    if not _VERSION.fullmatch(version):
        raise ClientVersionError(f"{spec}: {version!r} is not a release number")


def folder(spec: str) -> Path | None:
    name, version = split(spec)
    return None if version is None else cache_dir("client-versions", f"{PACKAGES[name][0]}-{version}")


def ensure(specs: list[str], out=sys.stderr) -> None:
    """Install every pinned version not installed yet (pip, from PyPI); ClientVersionError with
    pip's words when one cannot be."""
    for spec in sorted(set(specs)):
        target = folder(spec)
        if target is None or (target / ".installed").exists():
            continue
        name, version = split(spec)
        project = PACKAGES[name][0]
        print(f"installing {project}=={version} into {target} ...", file=out, flush=True)
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--no-deps", "--target", str(target), f"{project}=={version}"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClientVersionError(f"{spec}: pip could not install {project}=={version}: {proc.stderr.strip()[-600:]}")
        (target / ".installed").write_text(f"{project}=={version}\n")


def installed_version(spec: str) -> str | None:
    """The version of the client this process imports (the pinned folder comes first on the path)."""
    from importlib import metadata

    name, _ = split(spec)
    if name not in PACKAGES:
        return None
    try:
        return metadata.version(PACKAGES[name][0])
    except metadata.PackageNotFoundError:
        return None


PINNED_ENV = "BROKER_EMU_PINNED"   # set in a process started with pinned releases first on its path


def run_pinned(argv: list[str], specs: list[str]) -> int:
    """``broker-emu conformance --client kafka-python@2.2.21 ...`` (the replay a campaign prints
    for a pinned release): install the releases, then run the same command in a new process with
    their folders first on its path, as a campaign's run process has them."""
    import os

    names = [split(s)[0] for s in specs]
    for spec in specs:
        check(spec)
    if len(set(names)) < len(names):
        raise ClientVersionError(f"one release per client in a run: {sorted(specs)}")
    ensure(specs)
    paths = [str(folder(s)) for s in specs]
    env = {**os.environ, PINNED_ENV: ",".join(specs),
           "PYTHONPATH": os.pathsep.join([*paths, str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    return subprocess.run([sys.executable, "-m", "conformance.main", *argv], env=env).returncode


def unpin(specs: list[str]) -> list[str]:
    """In the process ``run_pinned`` started: the adapter names, once each pinned release is
    checked to be the one imported."""
    out = []
    for spec in specs:
        name, version = split(spec)
        if version is not None and installed_version(spec) != version:
            raise ClientVersionError(f"{spec}: this process imports {name} {installed_version(spec)}")
        out.append(name)
    return out
