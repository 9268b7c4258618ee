"""Every piece broker-emu downloads or builds is looked for in the one cache folder
(conformance/cache_dir.py), not beside the package's files: from an installed wheel those are in
site-packages. And a missing piece names how to install it, honestly when there is no dev/."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from conformance import cache_dir as cd

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    monkeypatch.setenv(cd.ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("BROKER_EMU_KAFKA_LIB", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cache"


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_go_adapters_are_found_in_the_cache(cache):
    from conformance.adapters.go_clients import FranzGoAdapter, SaramaAdapter

    built = _program(cache / "adapters" / "go" / "franzgo-adapter")
    assert FranzGoAdapter().command() == [str(built)]
    assert SaramaAdapter().command() is None
    assert "bash dev/build-adapters/go" in SaramaAdapter().not_built_reason()


@pytest.mark.skipif(shutil.which("java") is None, reason="the Java adapter's command needs java on PATH")
def test_the_java_adapter_is_found_in_the_cache(cache):
    from conformance.adapters.java_client import JavaAdapter, java_available

    assert JavaAdapter().command() is None and not java_available()
    assert "bash dev/build-adapters/java" in JavaAdapter().not_built_reason()
    jar = _program(cache / "adapters" / "java" / "java-adapter.jar")
    assert JavaAdapter().command()[-1] == str(jar) and java_available()


def test_kfake_is_found_in_the_cache(cache):
    from conformance.kfake_upstream import kfake_binary

    assert kfake_binary() == cache / "adapters" / "go" / "kfake"


def test_the_reference_kafka_and_pinned_client_releases_are_in_the_cache(cache):
    from conformance.campaign.client_versions import folder
    from conformance.realkafka.install import KafkaNotInstalled, check_installed, kafka_lib

    assert kafka_lib("4.4.0") == cache / "kafka" / "4.4.0" / "lib"
    if shutil.which("java"):
        with pytest.raises(KafkaNotInstalled, match="bash dev/install-kafka"):
            check_installed("4.4.0")
    assert folder("kafka-python@2.2.21") == cache / "client-versions" / "kafka-python-2.2.21"


def test_the_tools_and_benchmarks_use_the_cache_too(cache):
    from benchmarks.broker import kfake_binary
    from tests.realclients.other_brokers import kfake_binary as test_kfake_binary

    assert kfake_binary() == test_kfake_binary() == cache / "adapters" / "go" / "kfake"
    spec = importlib.util.spec_from_file_location("version_profiles_tool", CHECKOUT / "tools" / "version_profiles.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.maven_repository() == cache / "m2"


def test_an_installed_package_says_dev_scripts_are_not_there(monkeypatch, tmp_path):
    from conformance.adapters.go_clients import FranzGoAdapter

    package = tmp_path / "site-packages" / "conformance"
    package.mkdir(parents=True)
    monkeypatch.setattr(cd, "_PACKAGE_DIR", package)
    monkeypatch.delenv(cd.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    why = FranzGoAdapter().not_built_reason()
    assert str(tmp_path / "xdg" / "broker-emu" / "adapters" / "go" / "franzgo-adapter") in why
    assert "not in the installed package" in why and "README" in why
    assert os.path.isabs(str(cd.cache_dir()))


def test_an_installed_package_runs_kafka_in_the_cache_not_in_site_packages(monkeypatch, tmp_path):
    from conformance.realkafka.cluster import new_run_dir

    package = tmp_path / "site-packages" / "conformance"
    package.mkdir(parents=True)
    monkeypatch.setattr(cd, "_PACKAGE_DIR", package)
    monkeypatch.setenv(cd.ENV, str(tmp_path / "cache"))
    assert new_run_dir().parent == tmp_path / "cache" / "kafka-runs"
