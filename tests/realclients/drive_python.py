"""Drive one third-party Python Kafka client against a loopback listener, in its own process.

    python drive_python.py CLIENT PORT TOPIC CLIENT_ID VALUE MODE

CLIENT is confluent-kafka, kafka-python or aiokafka. MODE is ``produce`` (produce VALUE to
partition 0 of TOPIC with acks=1 and wait for the acknowledgement) or ``first`` (the same, but
with client-side timeouts short enough that the client gives up quickly against a silent
listener). Prints one JSON line: the client's version, whether the record was acknowledged and
the error the client reported, if any; exits 0 either way unless the driver itself broke.

Each client runs in its own process so that its threads, event loop, sockets and warnings
(kafka-python 3.0 warns at import under Python 3.11) cannot leak into the pytest process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any


def _timeouts(mode: str) -> tuple[int, int]:
    """(client request/metadata timeouts in ms, how long we wait for the ack in ms)."""
    return (1500, 2500) if mode == "first" else (4000, 6000)


def confluent_kafka(port: int, topic: str, client_id: str, value: bytes, mode: str) -> dict[str, Any]:
    import confluent_kafka as ck

    request_ms, wait_ms = _timeouts(mode)
    producer = ck.Producer({
        "bootstrap.servers": f"127.0.0.1:{port}",
        "client.id": client_id,
        "acks": 1,
        "linger.ms": 0,
        "message.timeout.ms": wait_ms - 500,
        "socket.timeout.ms": request_ms,
        "api.version.request.timeout.ms": request_ms,
    })
    outcome: dict[str, Any] = {"delivered": False, "error": "no delivery report"}

    def on_delivery(err: Any, msg: Any) -> None:
        outcome.update(delivered=err is None, error=None if err is None else str(err))

    producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
    producer.flush(wait_ms / 1000)
    # purge what is left so that destroying the producer does not wait for it
    producer.purge()
    producer.flush(0.5)
    return {"version": ck.__version__, "librdkafka": ck.libversion()[0], **outcome}


def kafka_python(port: int, topic: str, client_id: str, value: bytes, mode: str) -> dict[str, Any]:
    import kafka
    from kafka.errors import KafkaError

    request_ms, wait_ms = _timeouts(mode)
    out: dict[str, Any] = {"version": kafka.__version__, "delivered": False, "error": None}
    try:
        producer = kafka.KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", client_id=client_id, acks=1, linger_ms=0,
            # 3.0 defaults to idempotence, which needs acks=all and InitProducerId
            enable_idempotence=False, retries=0, request_timeout_ms=request_ms,
            bootstrap_timeout_ms=request_ms, max_block_ms=wait_ms, delivery_timeout_ms=wait_ms)
    except KafkaError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    try:
        producer.send(topic, value=value, partition=0).get(timeout=wait_ms / 1000)
        out["delivered"] = True
    except KafkaError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        producer.close(timeout=1)
    return out


def aiokafka(port: int, topic: str, client_id: str, value: bytes, mode: str) -> dict[str, Any]:
    import aiokafka as ak
    from aiokafka.errors import KafkaError

    request_ms, wait_ms = _timeouts(mode)
    out: dict[str, Any] = {"version": ak.__version__, "delivered": False, "error": None}

    async def run() -> None:
        producer = ak.AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", client_id=client_id, acks=1, linger_ms=0,
            request_timeout_ms=request_ms, metadata_max_age_ms=wait_ms)
        try:
            await asyncio.wait_for(producer.start(), wait_ms / 1000)
            await asyncio.wait_for(producer.send_and_wait(topic, value, partition=0), wait_ms / 1000)
            out["delivered"] = True
        except (TimeoutError, KafkaError) as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            await producer.stop()

    asyncio.run(run())
    return out


DRIVERS: dict[str, Callable[[int, str, str, bytes, str], dict[str, Any]]] = {
    "confluent-kafka": confluent_kafka,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka,
}


def main(argv: list[str]) -> None:
    client, port, topic, client_id, value, mode = argv
    if mode not in ("first", "produce"):
        raise SystemExit(f"unknown mode {mode!r}")
    result = DRIVERS[client](int(port), topic, client_id, value.encode(), mode)
    print(json.dumps({"client": client, **result}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
