"""The optional parts of broker-emu and the extra that installs each (pyproject.toml's
[project.optional-dependencies]): what a feature used without its extra says, in one line."""

from __future__ import annotations


def install(extra: str) -> str:
    """The command that installs an extra: ``pip install 'broker-emu[spark]'``."""
    return f"pip install 'broker-emu[{extra}]'"


SPARK = f"campaigns need Spark: {install('spark')} (and a Java 17 runtime)"
DATA_SOURCE = f"the broker-emu-kafka data source needs Spark: {install('spark')}"
JAVA_FOR_SPARK = ("campaigns need a Java 17 runtime for Spark (Debian: apt-get install openjdk-17-jre-headless; "
                  "elsewhere set JAVA_HOME)")
PYTEST_TRIO = f"trio_kafka_cluster needs pytest-trio: {install('pytest')}"


def client_missing(name: str) -> str:
    """A third-party Python client the adapters drive (confluent-kafka, kafka-python, aiokafka)."""
    return f"{name} is not installed: {install('clients')}"
