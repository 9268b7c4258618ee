"""kcat (Debian's, an older librdkafka) as a subprocess: it can produce; it has no poll(timeout)
or committed() of its own, so those scenarios are N/A for it."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

from conformance.adapters.base import RealTimeAdapter, RunEnv, scaled_ms
from conformance.model import Operation, Outcome


class KcatAdapter(RealTimeAdapter):
    name = "kcat"
    operations = frozenset({"produce", "admin_list_topics"})
    sasl = True

    def available(self):
        ok = shutil.which("kcat") is not None
        return ok, "" if ok else "kcat is not installed (Debian package kcat)"

    def client_version(self) -> str | None:
        return _librdkafka_version()

    def supports(self, steps):
        if any(s.kind == "produce" and s.args.get("count", 1) > 1 for s in steps):
            return False, "kcat batches all its records into one request; it cannot send one after another"
        if any(s.kind == "admin_list_topics" and s.args.get("repeat", 1) > 1 for s in steps):
            return False, ("each kcat -L is a new client that starts from its bootstrap list: it cannot list "
                           "twice as one client")
        return super().supports(steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [self._admin_list_topics(s, env) if s.kind == "admin_list_topics" else self._produce(s, env) for s in steps]

    def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        """``kcat -L -J``: librdkafka's all-topics Metadata, printed as JSON."""
        import json

        timeout_ms = int((step.timeout_s or scaled_ms(30_000, env.scale) / 1000) * 1000)
        args = ["kcat", "-b", env.bootstrap, "-L", "-J", "-m", str(max(1, timeout_ms // 1000)),
                "-X", f"client.id={env.client_id}", "-X", f"socket.timeout.ms={max(10, timeout_ms)}",
                *_passed_through(env.config)]
        start = env.clock()
        proc = subprocess.run(args, capture_output=True, timeout=timeout_ms / 1000 + 30)
        elapsed = env.clock() - start
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            return Outcome("admin_list_topics", False, elapsed, "KcatError", err[-1] if err else f"exit code {proc.returncode}")
        doc = json.loads(proc.stdout)
        return Outcome("admin_list_topics", True, elapsed, value=sorted(t["topic"] for t in doc.get("topics", [])))

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        c = env.config
        acks = str(c.get("acks", "all"))
        delivery = c.get("delivery.timeout.ms", scaled_ms(300_000, env.scale))
        if "max.block.ms" in c:
            delivery = min(delivery, c["max.block.ms"])
        args = ["kcat", "-b", env.bootstrap, "-P", "-t", step.args["topic"], "-c", str(step.args.get("count", 1)),
                "-X", f"client.id={env.client_id}", "-X", f"acks={'-1' if acks in ('all', '-1') else acks}",
                "-X", f"request.timeout.ms={c.get('request.timeout.ms', scaled_ms(30_000, env.scale))}",
                "-X", f"socket.timeout.ms={scaled_ms(60_000, env.scale)}", "-X", f"message.timeout.ms={delivery}",
                "-X", f"retry.backoff.ms={scaled_ms(100, env.scale)}"]
        if c.get("enable.idempotence"):
            args += ["-X", "enable.idempotence=true"]
        args += _passed_through(c)
        if step.args.get("partition") is not None:
            args += ["-p", str(step.args["partition"])]
        payload = b"\n".join([step.args["value"]] * step.args.get("count", 1)) + b"\n"
        start = env.clock()
        proc = subprocess.run(args, input=payload, capture_output=True, timeout=delivery / 1000 * 3 + 30)
        elapsed = env.clock() - start
        if proc.returncode == 0:
            return Outcome("produce", True, elapsed)
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        text = err[-1] if err else f"exit code {proc.returncode}"
        kind = "TimeoutException" if "timed out" in text.lower() else "KcatError"
        return Outcome("produce", False, elapsed, kind, text)


def _passed_through(config: dict) -> list[str]:
    """The scenario's settings librdkafka takes under Kafka's names (its sasl.mechanism is an
    alias of sasl.mechanisms)."""
    keys = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password", "socket.connection.setup.timeout.ms")
    return [arg for k in keys if k in config for arg in ("-X", f"{k}={config[k]}")]


@functools.cache
def _librdkafka_version() -> str | None:
    """kcat's own version and its librdkafka's, from ``kcat -V`` ("Version 1.7.1 (..., librdkafka 2.0.2 ...)")."""
    if shutil.which("kcat") is None:
        return None
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    found = re.search(r"Version (\S+) .*?librdkafka (\S+)", out)
    return f"{found[1]} (librdkafka {found[2]})" if found else None
