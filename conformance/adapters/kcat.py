"""kcat (Debian's, an older librdkafka) as a subprocess: it can produce; it has no poll(timeout)
or committed() of its own, so those scenarios are N/A for it."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from types import MappingProxyType

from conformance.adapters.base import RealTimeAdapter, RunEnv, scaled_ms
from conformance.client_capabilities import ClientCapabilities, Lack, Pin, fixed_setup_timeout, lacks_rebootstrap
from conformance.model import Operation, Outcome

# Debian's kcat package, which dev/install-clients installs (kcat -V: "Version 1.7.1 ... librdkafka 2.0.2")
KCAT, KCAT_LIBRDKAFKA = "1.7.1", "2.0.2"
CONFIGURATION = f"https://github.com/confluentinc/librdkafka/blob/v{KCAT_LIBRDKAFKA}/CONFIGURATION.md"
MODES = "its modes are produce, consume, metadata list and offset query (kcat -h; kcat.c usage)"


def _no_call(what: str) -> Lack:
    return Lack(f"kcat has no {what}: {MODES}", "kcat.c")


CAPABILITIES = ClientCapabilities(
    client="kcat", pin=Pin("dev/install-clients", "kcat", version=KCAT), bundles=f"librdkafka {KCAT_LIBRDKAFKA}",
    source="https://github.com/edenhill/kcat/blob/{version}/{path}",
    has=("delivery.timeout.ms", "linger.ms", "max.poll.interval.ms", "SASL", "socket.connection.setup.timeout.ms"),
    lacks=MappingProxyType({
        "max.block.ms": Lack(
            f"librdkafka {KCAT_LIBRDKAFKA} has no max.block.ms (CONFIGURATION.md): a produced record waits in the queue "
            "under message.timeout.ms", CONFIGURATION,
            judged="the adapter gives message.timeout.ms the smaller of delivery.timeout.ms and max.block.ms "
                   "(kcat.py _produce)"),
        "calls on one client": Lack(
            "a kcat run is one client given all its input up front: kcat -P reads stdin and batches what it reads "
            "(kcat.c producer_run), so it cannot send one record after another, and each kcat -L is a new client "
            "that starts from its bootstrap list, so it cannot list twice as one client", "kcat.c"),
        "transactions": Lack(
            "kcat -P wraps its whole input in one transaction when given transactional.id, begun at start and "
            "committed when the input ends (kcat.c producer_run): no init, begin or commit an application calls "
            "and times, no second producer with the same id", "kcat.c"),
        "poll(timeout)": Lack(f"kcat -C prints records until -c, -e or a signal ends it: no poll with a deadline; {MODES}",
                              "kcat.c"),
        "poll(0)": Lack(f"kcat -C has no poll that returns what is already fetched; {MODES}", "kcat.c"),
        "consumer calls": _no_call("consumer calls (committed offsets, watermarks, a commit, close) an application "
                                   "can make"),
        "committed(timeout)": _no_call("committed() call"),
        "position(timeout)": _no_call("position() call"),
        "offsets(timeout)": _no_call("end_offsets() or beginning_offsets() call (kcat -Q queries offsets by "
                                     "timestamp in a run of its own)"),
        "list_topics(timeout)": _no_call("consumer list_topics() call (kcat -L lists metadata in a run of its own)"),
        "commit_sync(timeout)": _no_call("commit call"),
        "close(timeout)": _no_call("close(timeout) call"),
        "default.api.timeout.ms": Lack(f"librdkafka {KCAT_LIBRDKAFKA} has no default.api.timeout.ms (CONFIGURATION.md)",
                                       CONFIGURATION),
        "KIP-848": Lack(
            f"librdkafka {KCAT_LIBRDKAFKA} has no group.protocol setting (its CONFIGURATION.md has group.protocol.type "
            "only; group.protocol=consumer came with librdkafka 2.4.0)", CONFIGURATION),
        "create_topics(timeout)": _no_call("topic creation"),
        "delete_records(timeout)": _no_call("record deletion"),
        **lacks_rebootstrap(
            f"librdkafka {KCAT_LIBRDKAFKA} has no metadata.recovery.strategy (CONFIGURATION.md): it came with a later "
            "librdkafka (KIP-899), the REBOOTSTRAP_REQUIRED answer and its trigger after it (KIP-1102)",
            CONFIGURATION),
        "share groups": Lack(f"kcat has no share consumer; {MODES} (kcat -G joins a classic consumer group)", "kcat.c"),
        "socket.connection.setup.timeout.max.ms": fixed_setup_timeout(f"librdkafka {KCAT_LIBRDKAFKA}", "socket.connection.setup.timeout.ms "
                                                               "(CONFIGURATION.md has no .max.ms)", CONFIGURATION),
    }),
    not_driven=MappingProxyType({
        "join_group_held": "kcat -G joins a group as a balanced consumer, but the kcat adapter has no join_group_held step",
        "configure_producer": ("the kcat adapter has no configure_producer step (kcat would refuse the settings as it "
                               "starts, the way librdkafka's rd_kafka_new does)"),
    }),
    notes=MappingProxyType({"delivery.timeout.ms": "librdkafka's alias of message.timeout.ms"}),
)


class KcatAdapter(RealTimeAdapter):
    name = "kcat"
    operations = frozenset({"produce", "admin_list_topics"})
    sasl = True
    capabilities = CAPABILITIES
    lacks = MappingProxyType({"socket.connection.setup.timeout.max.ms": CAPABILITIES.lacks["socket.connection.setup.timeout.max.ms"].reason})

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
    keys = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password", "socket.connection.setup.timeout.ms",
            "reconnect.backoff.ms", "reconnect.backoff.max.ms")
    if "reconnect.backoff.max.ms" in config and "reconnect.backoff.ms" not in config:
        # librdkafka refuses a cap below its 100 ms default base (confluent.py _common)
        config = {**config, "reconnect.backoff.ms": min(100, config["reconnect.backoff.max.ms"])}
    return [arg for k in keys if k in config for arg in ("-X", f"{k}={config[k]}")]


@functools.cache
def _librdkafka_version() -> str | None:
    """kcat's own version and its librdkafka's, from ``kcat -V`` ("Version 1.7.1 (..., librdkafka 2.0.2 ...)")."""
    if shutil.which("kcat") is None:
        return None
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    found = re.search(r"Version (\S+) .*?librdkafka (\S+)", out)
    return f"{found[1]} (librdkafka {found[2]})" if found else None
