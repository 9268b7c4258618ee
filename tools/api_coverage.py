"""Which Kafka APIs each test broker serves, measured: ApiVersions asked of broker-emu, franz-go's
kfake, librdkafka's mock cluster and (``--kafka``) Apache Kafka 4.4 itself, written to
docs/coverage.md — the table "what a Docker Kafka test suite can drop".

    .venv/bin/python tools/api_coverage.py            # emulator, kfake, librdkafka's mock
    .venv/bin/python tools/api_coverage.py --kafka    # and Apache Kafka (dev/install-kafka; ~30 s)

Each column is what that broker advertises (min-max), nothing read from documentation. An
advertised API is not a promise that every behaviour behind it is there; docs/admin.md and
docs/differences.md say what the emulator does behind each.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import socket
import ssl
import sys
from collections.abc import Callable, Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.protocol import ApiKey  # noqa: E402
from client.protocol.codec import decode_response, encode_request  # noqa: E402

OUT = ROOT / "docs" / "coverage.md"
BY_NAME = {k.api_name: k for k in ApiKey}
Versions = dict[int, tuple[int, int]]

# what a test suite's set-up and edge cases call, by client call -> the API behind it
CALLS = [
    ("produce / consume / commit (every client)", ["Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch"]),
    ("consumer groups, classic protocol", ["FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"]),
    ("consumer groups, KIP-848 (group.protocol=consumer)", ["ConsumerGroupHeartbeat", "ConsumerGroupDescribe"]),
    ("idempotent and transactional producers", ["InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
                                                "TxnOffsetCommit"]),
    ("create_topics / delete_topics / create_partitions", ["CreateTopics", "DeleteTopics", "CreatePartitions"]),
    ("describe_configs / alter_configs / incremental_alter_configs", ["DescribeConfigs", "AlterConfigs",
                                                                      "IncrementalAlterConfigs"]),
    ("delete_records", ["DeleteRecords"]),
    ("list / describe / delete consumer groups, delete group offsets", ["ListGroups", "DescribeGroups", "DeleteGroups",
                                                                        "OffsetDelete"]),
    ("elect_leaders", ["ElectLeaders"]),
    ("describe_cluster", ["DescribeCluster"]),
    ("list / describe transactions, describe producers", ["ListTransactions", "DescribeTransactions", "DescribeProducers"]),
    ("describe_log_dirs", ["DescribeLogDirs"]),
    ("partition reassignments", ["AlterPartitionReassignments", "ListPartitionReassignments"]),
    ("client quotas", ["DescribeClientQuotas", "AlterClientQuotas"]),
    ("ACLs", ["DescribeAcls", "CreateAcls", "DeleteAcls"]),
    ("SCRAM credentials", ["DescribeUserScramCredentials", "AlterUserScramCredentials"]),
    ("share groups (KIP-932: KafkaShareConsumer)", ["ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch",
                                                    "ShareAcknowledge"]),
    ("share-group offsets (KIP-932 admin)", ["DescribeShareGroupOffsets", "AlterShareGroupOffsets",
                                            "DeleteShareGroupOffsets"]),
]


def call(host: str, port: int, api: ApiKey, version: int, body: dict, tls: ssl.SSLContext | None = None) -> Any:
    with socket.create_connection((host, port), timeout=10) as raw:
        s = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw
        s.sendall(encode_request(api, version, 1, "api-coverage", body))
        size = int.from_bytes(_read(s, 4), "big")
        return decode_response(api, version, _read(s, size))[1]


def api_versions(host: str, port: int) -> Versions:
    """ApiVersions v0 (no tagged fields: librdkafka's mock adds bytes our strict v3 decoder refuses)."""
    answer = call(host, port, ApiKey.API_VERSIONS, 0, {})
    return {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}


def sasl_mechanisms(host: str, port: int, tls: ssl.SSLContext | None = None) -> str:
    """The mechanisms this listener says are enabled, asked with a SaslHandshake v1 for a mechanism
    nobody serves: the error answer lists them (kfake lists them only then)."""
    try:
        answer = call(host, port, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "NO-SUCH-MECHANISM"}, tls)
    except Exception as exc:
        return f"no answer ({type(exc).__name__})"
    return ", ".join(answer.mechanisms) or "none"


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


def _split(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def emulator() -> Iterator[str]:
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1) as tc:
        yield tc.bootstrap


@contextlib.contextmanager
def kfake() -> Iterator[str]:
    from tests.realclients.other_brokers import KfakeCluster

    k = KfakeCluster(brokers=1)
    try:
        yield k.bootstrap
    finally:
        k.close()


@contextlib.contextmanager
def librdkafka_mock() -> Iterator[str]:
    from confluent_kafka import Producer

    p = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    broker = next(iter(p.list_topics(timeout=10).brokers.values()))
    try:
        yield f"{broker.host}:{broker.port}"
    finally:
        p.flush(1)


@contextlib.contextmanager
def apache_kafka() -> Iterator[str]:
    from conformance.realkafka.cluster import KafkaCluster

    k = KafkaCluster(brokers=1).start()
    try:
        yield k.bootstrap
    finally:
        k.stop()


def sasl_required(host: str, port: int, tls: ssl.SSLContext | None = None) -> str:
    """Whether a Metadata request before any SASL exchange is answered (no) or refused (yes)."""
    try:
        call(host, port, ApiKey.METADATA, 1, {"topics": []}, tls)
    except Exception as exc:
        return f"yes ({type(exc).__name__})"
    return "no"


def probe(bootstrap: str, ca: str | None = None, cert: tuple[str, str] | None = None) -> tuple[str, str, str, str]:
    """What a client meets on this listener: does a TLS handshake succeed (verified against
    ``ca`` when given, with the client certificate ``cert`` when given), which SASL mechanisms a
    SaslHandshake v1 for PLAIN lists (over TLS when TLS worked), whether SASL is required, and
    whether a request over TLS without a client certificate is refused."""
    host, port = _split(bootstrap)
    context = ssl.create_default_context(cafile=ca) if ca else ssl._create_unverified_context()
    if cert:
        context.load_cert_chain(*cert)
    try:
        with socket.create_connection((host, port), timeout=10) as raw, context.wrap_socket(raw, server_hostname=host):
            tls = ("yes, verified against its CA" if ca else "yes") + (", with a client certificate" if cert else "")
    except (OSError, ssl.SSLError) as exc:
        tls, context = f"no ({type(exc).__name__})", None
    if context is None:
        without = "—"
    else:
        bare = ssl.create_default_context(cafile=ca) if ca else ssl._create_unverified_context()
        try:
            call(host, port, ApiKey.API_VERSIONS, 0, {}, bare)
            without = "no"
        except Exception as exc:   # TLS 1.3: the refusal arrives as an alert after the handshake
            without = f"yes ({type(exc).__name__})"
    return tls, sasl_mechanisms(host, port, context), sasl_required(host, port, context), without


def security_modes(kafka: bool) -> list[tuple[str, ...]]:
    """Each broker started in each security mode it has a setting for: (broker, how, TLS, SASL)."""
    import tempfile

    import trustme

    from broker_emu.runtime import run_cluster_in_thread
    from tests.realclients.other_brokers import KfakeCluster

    rows: list[tuple[str, ...]] = []
    if kafka:
        with apache_kafka() as bootstrap:
            rows.append(("Apache Kafka", "default listener (PLAINTEXT)", *probe(bootstrap)))
    for protocol in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        config = {"emu.security.protocol": protocol, "emu.sasl.users": "u:p"}
        with run_cluster_in_thread(brokers=1, config=config) as tc:
            tls = tc.cluster.security.tls
            rows.append(("broker-emu", f"`--listener {protocol}://…`", *probe(tc.bootstrap, tls.ca_path if tls else None)))
    config = {"emu.security.protocol": "SSL", "ssl.client.auth": "required", "emu.tls.client.certs": "u"}
    with run_cluster_in_thread(brokers=1, config=config) as tc:
        tls = tc.cluster.security.tls
        rows.append(("broker-emu", "`--listener SSL://… --client-cert u`", *probe(tc.bootstrap, tls.ca_path, tls.client_paths["u"])))
    with tempfile.TemporaryDirectory() as folder:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        cert.cert_chain_pems[0].write_to_path(f"{folder}/cert.pem")
        cert.private_key_pem.write_to_path(f"{folder}/key.pem")
        ca.cert_pem.write_to_path(f"{folder}/ca.pem")
        for how, args, ca_path in [("default", (), None),
                                   ("`kfake.EnableSASL()` + `Superuser`", ("-sasl", "SCRAM-SHA-256:admin:admin"), None),
                                   ("`kfake.TLS(config)` (your certificate)", ("-tls-dir", folder), f"{folder}/ca.pem")]:
            try:
                k = KfakeCluster(brokers=1, extra_args=args)
            except (OSError, RuntimeError) as exc:
                rows.append(("kfake", how, f"not measured: {exc}", "", "", ""))
                continue
            try:
                rows.append(("kfake", how, *probe(k.bootstrap, ca_path)))
            finally:
                k.close()
    with librdkafka_mock() as bootstrap:
        rows.append(("librdkafka mock", "default (its test.mock.* settings have none for security)", *probe(bootstrap)))
    return rows


def measure(brokers: list[tuple[str, Callable[[], contextlib.AbstractContextManager[str]], str]]
            ) -> dict[str, Versions | str]:
    out: dict[str, Versions | str] = {}
    for name, start, _ in brokers:
        try:
            with start() as bootstrap:
                out[name] = api_versions(*_split(bootstrap))
        except Exception as exc:   # a broker that is not installed: its column says why
            out[name] = f"not measured: {type(exc).__name__}: {exc}"
    return out


def render(results: dict[str, Versions | str], versions: dict[str, str],
           modes: list[tuple[str, ...]]) -> str:
    names = list(results)
    measured = {n: r for n, r in results.items() if isinstance(r, dict)}
    keys = sorted(set().union(*measured.values()) if measured else set())
    lines = ["# What each test broker serves", "",
             "Measured by `tools/api_coverage.py` (ApiVersions asked of each broker; regenerate it after adding an",
             "API). A version range means the broker advertises the API; `—` that it does not. What the emulator",
             "does behind each API: docs/admin.md, docs/differences.md.", "",
             "| broker | version | APIs advertised |", "|---|---|---|"]
    for n in names:
        r = results[n]
        lines.append(f"| {n} | {versions.get(n, '')} | {len(r) if isinstance(r, dict) else r} |")
    lines += ["", "## By test-suite call", "", "| what a test suite calls | " + " | ".join(names) + " |",
              "|---|" + "---|" * len(names)]
    for call, apis in CALLS:
        cells = []
        for n in names:
            r = results[n]
            if not isinstance(r, dict):
                cells.append("?")
                continue
            have = [a for a in apis if int(BY_NAME[a]) in r]
            cells.append("yes" if len(have) == len(apis) else "no" if not have else
                         "partly (" + ", ".join(a for a in apis if a not in have) + " missing)")
        lines.append(f"| {call} | " + " | ".join(cells) + " |")
    lines += ["", "## Every API", "", "| API | key | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for key in keys:
        cells = []
        for n in names:
            r = results[n]
            cells.append("?" if not isinstance(r, dict) else f"{r[key][0]}–{r[key][1]}" if key in r else "—")
        lines.append(f"| {_name(key)} | {key} | " + " | ".join(cells) + " |")
    lines += ["", "## Security modes", "",
              "Each broker started with each security setting it has, then probed as a client would: a TLS",
              "handshake (verified against the CA where the broker has one), and a SaslHandshake v1 for a",
              "mechanism nobody serves — the answer lists those enabled (over TLS where TLS worked); SASL is",
              "required when a Metadata request sent first is refused; a client certificate when a request",
              "over TLS without one is refused.", "",
              "| broker | started with | TLS | SASL mechanisms | SASL required | client certificate required |",
              "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in modes]
    lines += ["", "broker-emu also enforces ACLs when `authorizer.class.name` is set, re-authenticates and expires",
              "sessions (KIP-368) and checks OAUTHBEARER's unsecured JWTs as Kafka's default validator does",
              "(docs/security.md); a client certificate's subject is the principal on an SSL listener, as Kafka's",
              "DefaultKafkaPrincipalBuilder makes it (compared on Kafka 4.4: tests/realkafka/test_mtls_ab.py).",
              "Several listeners per broker, one per security protocol: `emu.extra.listeners`. Not served by",
              "broker-emu: GSSAPI.", ""]
    return "\n".join(lines)


def _name(key: int) -> str:
    try:
        return ApiKey(key).api_name
    except ValueError:
        return f"(api {key})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kafka", action="store_true", help="also start Apache Kafka (needs dev/install-kafka)")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args(argv)
    import confluent_kafka

    brokers = [("broker-emu", emulator, "this repository"), ("kfake", kfake, "franz-go kfake (dev/build-adapters/go)"),
               ("librdkafka mock", librdkafka_mock, f"librdkafka {confluent_kafka.libversion()[0]}")]
    if args.kafka:
        brokers.insert(0, ("Apache Kafka", apache_kafka, "4.4.0"))
    versions = {n: v for n, _, v in brokers}
    results = measure(brokers)
    args.out.write_text(render(results, versions, security_modes(args.kafka)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
