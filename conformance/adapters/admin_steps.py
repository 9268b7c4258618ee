"""The ``create_topics`` and ``delete_records`` steps for the real-time third-party admin clients
(confluent-kafka, kafka-python, aiokafka): the step's deadline becomes the call's ``timeout_ms`` (its
operation timeout), and the client's own request timeout is left longer, so the broker's answer
at that deadline — a KRaft controller's, DeleteRecords' purgatory's — is what comes back."""

from __future__ import annotations

from typing import Any

from conformance.adapters.base import RunEnv
from conformance.model import Operation, Outcome

ADMIN_OPERATIONS = frozenset({"create_topics", "delete_records"})
TIMED_OUT = {"REQUEST_TIMED_OUT", "_TIMED_OUT", "RequestTimedOutError", "KafkaTimeoutError"}


def _name(raw: str) -> str:
    """Kafka's exception for REQUEST_TIMED_OUT (and a client's own deadline) is TimeoutException."""
    return "TimeoutException" if raw in TIMED_OUT else raw


def _ck_error(exc: BaseException) -> tuple[str, str]:
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args and hasattr(exc.args[0], "name"):
        return _name(exc.args[0].name()), exc.args[0].str()
    return type(exc).__name__, str(exc)


def confluent_create_topics(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    from confluent_kafka.admin import AdminClient, NewTopic

    a, timeout = step.args, step.timeout_s or 30.0
    admin = AdminClient(common)
    start = env.clock()
    futures = admin.create_topics([NewTopic(a["topic"], a.get("partitions", 1), a.get("replication_factor", 1))],
                                  operation_timeout=timeout, request_timeout=timeout * 2)
    try:
        futures[a["topic"]].result()
    except Exception as exc:  # noqa: BLE001 — the client's own error is the outcome
        return Outcome("create_topics", False, env.clock() - start, *_ck_error(exc))
    return Outcome("create_topics", True, env.clock() - start)


def confluent_delete_records(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    a, timeout = step.args, step.timeout_s or 30.0
    admin = AdminClient(common)
    start = env.clock()
    futures = admin.delete_records([TopicPartition(a["topic"], a["partition"], a.get("offset", -1))],
                                   operation_timeout=timeout, request_timeout=timeout * 2)
    try:
        got = next(iter(futures.values())).result()
    except Exception as exc:  # noqa: BLE001
        return Outcome("delete_records", False, env.clock() - start, *_ck_error(exc))
    return Outcome("delete_records", True, env.clock() - start, value=got.low_watermark)


def kafka_python_create_topics(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    from kafka.admin import KafkaAdminClient, NewTopic

    a, timeout = step.args, step.timeout_s or 30.0
    admin = KafkaAdminClient(**{**common, "request_timeout_ms": int(timeout * 2000)})
    start = env.clock()
    try:
        admin.create_topics([NewTopic(a["topic"], a.get("partitions", 1), a.get("replication_factor", 1))],
                            timeout_ms=int(timeout * 1000))
    except Exception as exc:  # noqa: BLE001
        return Outcome("create_topics", False, env.clock() - start, _name(type(exc).__name__), str(exc))
    finally:
        admin.close()
    return Outcome("create_topics", True, env.clock() - start)


def kafka_python_delete_records(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    a, timeout = step.args, step.timeout_s or 30.0
    admin = KafkaAdminClient(**{**common, "request_timeout_ms": int(timeout * 2000)})
    start = env.clock()
    try:
        got = admin.delete_records({TopicPartition(a["topic"], a["partition"]): a.get("offset", -1)},
                                   timeout_ms=int(timeout * 1000))
    except Exception as exc:  # noqa: BLE001
        return Outcome("delete_records", False, env.clock() - start, _name(type(exc).__name__), str(exc))
    finally:
        admin.close()
    return Outcome("delete_records", True, env.clock() - start, value=str(got))


async def aiokafka_create_topics(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    """AIOKafkaAdminClient.create_topics (aiokafka/admin/client.py) returns the CreateTopics
    response as it came and raises nothing for a topic's error: the error code of the step's
    topic in ``topic_errors`` is the outcome, named by aiokafka's own class for it
    (``aiokafka.errors.for_code``), REQUEST_TIMED_OUT as Kafka's TimeoutException."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import for_code

    a, timeout = step.args, step.timeout_s or 30.0
    admin = AIOKafkaAdminClient(**{**common, "request_timeout_ms": int(timeout * 2000)})
    await admin.start()
    start = env.clock()
    try:
        got = await admin.create_topics([NewTopic(a["topic"], a.get("partitions", 1), a.get("replication_factor", 1))],
                                        timeout_ms=int(timeout * 1000))
    except Exception as exc:  # noqa: BLE001
        return Outcome("create_topics", False, env.clock() - start, _name(type(exc).__name__), str(exc))
    finally:
        await admin.close()
    elapsed = env.clock() - start
    for topic, code, *message in got.topic_errors:   # (topic, error_code[, error_message]) by version
        if topic == a["topic"] and code:
            error = for_code(code)
            return Outcome("create_topics", False, elapsed, _name(error.__name__), f"[Error {code}] {error.message}: "
                           f"{message[0] if message and message[0] else error.description}")
    return Outcome("create_topics", True, elapsed)


async def aiokafka_delete_records(common: dict[str, Any], step: Operation, env: RunEnv) -> Outcome:
    """AIOKafkaAdminClient.delete_records raises the class of a partition's error code
    (RequestTimedOutError for REQUEST_TIMED_OUT: Kafka's TimeoutException); its value is the
    partition's new low watermark."""
    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    a, timeout = step.args, step.timeout_s or 30.0
    admin = AIOKafkaAdminClient(**{**common, "request_timeout_ms": int(timeout * 2000)})
    await admin.start()
    tp = TopicPartition(a["topic"], a["partition"])
    start = env.clock()
    try:
        got = await admin.delete_records({tp: RecordsToDelete(a.get("offset", -1))}, timeout_ms=int(timeout * 1000))
    except Exception as exc:  # noqa: BLE001
        return Outcome("delete_records", False, env.clock() - start, _name(type(exc).__name__), str(exc))
    finally:
        await admin.close()
    return Outcome("delete_records", True, env.clock() - start, value=got.get(tp))
