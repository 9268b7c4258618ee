"""The command line's first minute: ``--version``, and input errors that say what is wrong in one
line (with a did-you-mean when a name is misspelled) and exit 2, as argparse's own usage errors
do, instead of a traceback, a list of every known name, or a silently different cluster."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib

import pytest

from conformance.main import main
from tests.broker_emu.control.serve import ROOT


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``broker-emu ARGV`` in this process: (exit status, stdout, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:   # argparse, or SystemExit("message") as Python itself would print it
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def serve(*args: str) -> subprocess.CompletedProcess:
    """``broker-emu serve ARGS`` as a process (an argument that is accepted starts a cluster that
    runs until stopped: the timeout ends it, and the test fails)."""
    return subprocess.run([sys.executable, "-m", "conformance.main", "serve", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=20)


def test_version_prints_the_package_version_and_exits_0(capsys):
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out == f"broker-emu {importlib.metadata.version('broker-emu')}\n"


def test_version_without_package_metadata_reads_pyproject(monkeypatch):
    from broker_emu import cli as emulator_cli

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with open(f"{ROOT}/pyproject.toml", "rb") as f:
        assert emulator_cli.package_version() == tomllib.load(f)["project"]["version"]


@pytest.mark.parametrize("brokers", ["0", "-2", "1001"])
def test_serve_refuses_no_brokers(brokers):
    out = serve("--brokers", brokers)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"error: --brokers must be between 1 and 1000, got {brokers}\n"


@pytest.mark.parametrize("args, message", [
    (["--brokers", "1", "--topic", "orders:3:3"],
     "error: topic orders: replication factor 3 is more than the 1 broker(s) (--brokers)"),
    (["--topic", "orders:3:4"], "error: topic orders: replication factor 4 is more than the 3 broker(s) (--brokers)"),
    (["--topic", "orders:3:0"], "error: topic orders: replication factor must be at least 1, got 0"),
    (["--topic", "orders:0"], "error: topic orders: partitions must be between 1 and 10000, got 0"),
    (["--topic", "orders:x"], "error: --topic wants NAME[:PARTITIONS[:RF]], got 'orders:x'"),
    (["--topic", "a:1:1:1"], "error: --topic wants NAME[:PARTITIONS[:RF]], got 'a:1:1:1'"),
    (["--topic", "bad/name"], "error: topic 'bad/name': Topic name is invalid: 'bad/name' contains one or more "
                              "characters other than ASCII alphanumerics, '.', '_' and '-'"),
])
def test_serve_refuses_a_bad_topic_spec_in_one_line(args, message):
    out = serve(*args)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == message + "\n"


def test_serve_suggests_the_broker_config_key_meant():
    out = serve("--config", "replica.lag.time.max.msx=1")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "error: unknown broker config 'replica.lag.time.max.msx'; did you mean 'replica.lag.time.max.ms'?\n"


def test_serve_names_an_unknown_broker_config_key_without_listing_them_all():
    from broker_emu.config import DEFAULTS

    out = serve("--config", "zzz=1")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"error: unknown broker config 'zzz' (broker_emu/config.py lists the {len(DEFAULTS)} known)\n"


def test_serve_refuses_a_bad_broker_config_value_with_exit_2():
    out = serve("--config", "replica.lag.time.max.ms=soon")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "error: replica.lag.time.max.ms must be an integer, got 'soon'\n"


def test_conformance_suggests_the_scenario_meant(capsys):
    code, out, err = cli(capsys, "conformance", "--scenario", "kip19.produce-blak-hole", "--client", "ours")
    assert (code, out) == (2, "")
    assert err == ("error: no scenario matches 'kip19.produce-blak-hole'; did you mean 'kip19.produce-black-hole'? "
                   "(broker-emu conformance --list)\n")


def test_conformance_refuses_each_unknown_scenario_not_only_when_none_matches(capsys):
    code, _, err = cli(capsys, "conformance", "--scenario", "kip19.produce-black-hole", "--scenario", "zzz-nothing",
                       "--client", "ours")
    assert code == 2 and err == "error: no scenario matches 'zzz-nothing' (broker-emu conformance --list)\n"


def test_conformance_suggests_the_client_meant(capsys):
    code, out, err = cli(capsys, "conformance", "--client", "confluent-kafak", "--scenario", "kip19.produce-black-hole")
    assert (code, out) == (2, "")
    assert err == "error: unknown client 'confluent-kafak'; did you mean 'confluent-kafka'?\n"


def test_conformance_refuses_a_bad_param_with_exit_2(capsys):
    code, _, err = cli(capsys, "conformance", "--scenario", "kip19.produce-black-hole", "--client", "ours",
                       "--param", "bogus=1")
    assert code == 2 and err == "error: unknown parameter 'bogus' (see conformance/params.py)\n"


def test_explain_suggests_the_scenario_meant(capsys):
    code, out, err = cli(capsys, "explain", "kip19.slow-broker-no-reconect")
    assert (code, out) == (2, "")
    assert err == ("error: no scenario 'kip19.slow-broker-no-reconect'; did you mean 'kip19.slow-broker-no-reconnect'? "
                   "(broker-emu explain --list)\n")


def test_explain_suggests_the_client_meant(capsys):
    code, out, err = cli(capsys, "explain", "kip19.produce-black-hole", "--client", "kafka-pyhton")
    assert (code, out) == (2, "")
    assert err == "error: unknown client 'kafka-pyhton'; did you mean 'kafka-python'?\n"


@pytest.mark.parametrize("spec", ["orders:x", "orders:0", ":3"])
def test_kafka_start_checks_its_topic_specs_before_starting_a_node(capsys, monkeypatch, tmp_path, spec):
    monkeypatch.setenv("BROKER_EMU_KAFKA_LIB", str(tmp_path / "no-kafka-here"))   # were it to start, it could not
    code, out, err = cli(capsys, "kafka", "start", "--topic", "orders:1", "--topic", spec)
    assert (code, out) == (2, "")
    assert err == f"error: --topic wants NAME[:PARTITIONS] with PARTITIONS at least 1, got {spec!r}\n"


def test_a_port_in_use_is_a_runtime_failure_exit_1_in_one_line():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = serve("--brokers", "1", "--port", str(taken.getsockname()[1]))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and "in use" in out.stderr


def test_one_client_name_on_every_command_line(capsys):
    code, out, err = cli(capsys, "conformance", "--client", "ours", "--scenario", "kip266.poll-zero")
    assert code == 0 and "broker-emu (async)" in out and "note:" not in err
    code, out, err = cli(capsys, "conformance", "--client", "broker-emu (async)", "--scenario", "kip266.poll-zero")
    assert code == 0 and "note: 'broker-emu (async)' is spelled 'ours' on the command line now" in err
    code, _, err = cli(capsys, "conformance", "--client", "our", "--scenario", "kip266.poll-zero")
    assert code == 2 and "did you mean 'ours'" in err
    from conformance.main import build_parser

    assert build_parser().parse_args(["chaos", "--client", "broker-emu (async)"]).client == "ours"
    code, out, _ = cli(capsys, "explain", "kip266.poll-zero", "--client", "ours")
    assert code == 0 and "verdict for broker-emu (async)" in out


def test_serve_names_its_scenario_file_faults_as_the_proxy_does_and_takes_the_old_spelling(capsys):
    from conformance.main import build_parser

    assert build_parser().parse_args(["serve", "--faults", "f.yaml"]).scenario == "f.yaml"
    assert build_parser().parse_args(["serve", "--scenario", "f.yaml"]).scenario == "f.yaml"
    assert "note: --scenario is spelled --faults now" in capsys.readouterr().err


def test_serve_says_where_its_defaults_are_not_kafkas():
    proc = subprocess.Popen([sys.executable, "-m", "conformance.main", "serve", "--brokers", "1"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("bootstrap=")
        note = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert note.startswith("note: Kafka's defaults, except default.replication.factor=3 (Kafka: 1;")
    assert "transaction.partition.verification.enable=False (Kafka: True;" in note
    proc = subprocess.Popen([sys.executable, "-m", "conformance.main", "serve", "--brokers", "1", "--config",
                             "default.replication.factor=1", "--config", "transaction.partition.verification.enable=true"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("bootstrap=")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "Kafka's defaults, except" not in err        # set to Kafka's own: nothing to say
