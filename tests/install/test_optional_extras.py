"""The base install (no Spark, no pytest-trio, no third-party clients) runs the emulator, our
client, the conformance catalogue and the pytest plugin; an optional feature used without its
extra says in one line which extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the base install lacks: the extras' packages (spark, test, clients) and their dependencies
OPTIONAL = ("pyspark", "pyarrow", "pandas", "pytest_trio", "hypothesis", "kio", "schemathesis",
            "confluent_kafka", "kafka", "aiokafka")
HIDE = f"import sys\nfor m in {OPTIONAL!r}: sys.modules[m] = None\n"


def _python(code: str, cwd: Path, timeout: float = 60, **env_extra: str) -> subprocess.CompletedProcess:
    """``code`` in a new interpreter that imports this checkout and cannot import ``OPTIONAL``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    return subprocess.run([sys.executable, "-c", HIDE + code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _hide(monkeypatch, *modules: str) -> None:
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


@pytest.mark.parametrize("argv", [["--help"], ["explain", "--list"], ["conformance", "--list"], ["serve", "--help"]])
def test_the_command_runs_without_any_extra(argv, tmp_path):
    out = _python(f"from conformance.main import main\nraise SystemExit(main({argv!r}))", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout


def test_the_plugin_and_the_emulator_import_without_any_extra(tmp_path):
    out = _python("import conformance.pytest_plugin, broker_emu.cli, client\n"
                  "from broker_emu.runtime import open_cluster, run_cluster_in_thread\nprint('ok')", tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_campaign_without_spark_says_which_extra_to_install(monkeypatch, tmp_path, capsys):
    from conformance.main import main

    _hide(monkeypatch, "pyspark")
    assert main(["campaign", str(ROOT / "examples" / "campaign-small.yaml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: campaigns need Spark: pip install 'broker-emu[spark]' (and a Java 17 runtime)"
    assert not (tmp_path / "out").exists()


def test_a_campaign_without_java_says_so(monkeypatch, tmp_path):
    pytest.importorskip("pyspark")
    from conformance.spark_session import SparkUnavailable, get_session

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkUnavailable, match=r"^campaigns need a Java 17 runtime for Spark \(Debian: "):
        get_session("local[1]")


def test_the_data_source_without_spark_says_which_extra_to_install(monkeypatch):
    _hide(monkeypatch, "pyspark", "pyspark.sql", "pyspark.sql.datasource")
    monkeypatch.delitem(sys.modules, "conformance.campaign.kafka_source", raising=False)
    with pytest.raises(ImportError, match=r"the broker-emu-kafka data source needs Spark: pip install 'broker-emu\[spark\]'"):
        import conformance.campaign.kafka_source  # noqa: F401


def test_a_third_party_client_not_installed_names_the_clients_extra(monkeypatch):
    from conformance.adapters.aiokafka import AiokafkaAdapter
    from conformance.adapters.confluent import ConfluentAdapter
    from conformance.adapters.kafka_python import KafkaPythonAdapter
    from conformance.chaos.kits import KITS

    _hide(monkeypatch, "confluent_kafka", "kafka", "aiokafka")
    for adapter in (ConfluentAdapter(), KafkaPythonAdapter(), AiokafkaAdapter()):
        assert adapter.available() == (False, f"{adapter.name} is not installed: pip install 'broker-emu[clients]'")
    for name in ("confluent-kafka", "kafka-python", "aiokafka"):
        assert KITS[name].available() == (False, f"{name} is not installed: pip install 'broker-emu[clients]'")


def test_the_trio_fixture_without_pytest_trio_says_which_extra_to_install(tmp_path):
    (tmp_path / "test_t.py").write_text("async def test_t(trio_kafka_cluster):\n    pass\n")
    # only the plugin under test: pytest loads no other (pytest-trio's would not import)
    out = _python("import pytest\nraise SystemExit(pytest.main(['-p', 'conformance.pytest_plugin', '-p', 'no:cacheprovider', "
                  "'test_t.py']))", tmp_path, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "trio_kafka_cluster needs pytest-trio: pip install 'broker-emu[pytest]'" in out.stdout


def test_the_extras_a_user_expects_exist_and_dev_install_clients_installs_the_clients_extra():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"test", "spark", "clients", "pytest"} <= set(extras)
    assert sorted(p.split("==")[0] for p in extras["clients"]) == ["aiokafka", "confluent-kafka", "kafka-python"]
    assert all("==" in p for p in extras["clients"])   # the versions the suite is measured with
    assert {p.split(">=")[0] for p in extras["pytest"]} == {"pytest", "pytest-trio"}
    read = subprocess.run(["bash", "-c", 'eval "$(sed -n "/^py_clients()/,/^}/p" dev/install-clients)"; py_clients'],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    assert read.stdout.split() == extras["clients"]
