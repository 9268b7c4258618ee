"""One Spark session for every campaign and data-source test (starting a JVM costs seconds)."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from conformance.campaign.kafka_source import register
    from conformance.spark_session import get_session

    session = get_session("local[2]", "broker-emu tests", parallelism=2)
    register(session)
    yield session
    session.stop()
