"""Where the reference Kafka lives: the jars ``dev/install-kafka`` copies into
``kafka/<version>/lib`` in the cache (conformance/cache_dir.py; version pinned in
``dev/kafka/pom.xml``), and the ``java`` that runs them."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from conformance.cache_dir import cache_dir, install_hint

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "dev" / "kafka" / "pom.xml"
DEFAULT_VERSION = "4.4.0"


class KafkaNotInstalled(RuntimeError):
    """Java or the Kafka jars are missing; the message says how to install them."""


def kafka_version() -> str:
    """The pinned version: ``<kafka.version>`` in dev/kafka/pom.xml."""
    try:
        found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    except OSError:
        found = None
    return found.group(1).strip() if found else DEFAULT_VERSION


def kafka_lib(version: str | None = None) -> Path:
    """The folder of jars: ``$BROKER_EMU_KAFKA_LIB`` if set, else kafka/<version>/lib in the cache."""
    override = os.environ.get("BROKER_EMU_KAFKA_LIB")
    if override:
        return Path(override)
    return cache_dir("kafka", version or kafka_version(), "lib")


def java_binary() -> str:
    """``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` from PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise KafkaNotInstalled("java not found on PATH (Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def check_installed(version: str | None = None) -> Path:
    """The jar folder, after checking that java and the broker's jar are there."""
    java_binary()
    lib = kafka_lib(version)
    if not any(lib.glob("kafka_2.13-*.jar")):
        raise KafkaNotInstalled(f"no Kafka broker jar in {lib} (dev/install-kafka needs mvn): {install_hint('dev/install-kafka')}")
    return lib
