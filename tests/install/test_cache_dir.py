"""The one cache folder (conformance/cache_dir.py): $BROKER_EMU_CACHE, else the source checkout's
.cache, else the user's cache folder; the same answer whatever the current directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import cache_dir as cd

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch):
    for name in (cd.ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _installed(monkeypatch, tmp_path: Path) -> Path:
    """This package as if installed: its folder in a site-packages with no pyproject.toml."""
    package = tmp_path / "site-packages" / "conformance"
    package.mkdir(parents=True)
    monkeypatch.setattr(cd, "_PACKAGE_DIR", package)
    return package


def test_the_variable_wins_over_everything(clean_env, tmp_path):
    clean_env.setenv(cd.ENV, str(tmp_path / "c"))
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cd.cache_dir() == tmp_path / "c"
    assert cd.cache_dir("adapters", "go") == tmp_path / "c" / "adapters" / "go"


def test_a_source_checkout_uses_its_own_cache_from_any_directory(clean_env, tmp_path):
    clean_env.chdir(tmp_path)
    assert cd.source_checkout() == CHECKOUT
    assert cd.cache_dir("kafka") == CHECKOUT / ".cache" / "kafka"


def test_a_checkout_is_a_parent_folder_with_broker_emus_pyproject(tmp_path):
    (tmp_path / "conformance").mkdir()
    assert cd.source_checkout(tmp_path / "conformance") is None      # no pyproject.toml
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    assert cd.source_checkout(tmp_path / "conformance") is None
    (tmp_path / "pyproject.toml").write_text("[project\nname = ")
    assert cd.source_checkout(tmp_path / "conformance") is None      # not TOML
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "broker-emu"\n')
    assert cd.source_checkout(tmp_path / "conformance") == tmp_path


def test_an_installed_package_uses_the_xdg_cache_home(clean_env, tmp_path):
    _installed(clean_env, tmp_path)
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cd.source_checkout() is None
    assert cd.cache_dir("m2") == tmp_path / "xdg" / "broker-emu" / "m2"


def test_an_installed_package_defaults_to_dot_cache_in_the_home_folder(clean_env, tmp_path):
    _installed(clean_env, tmp_path)
    clean_env.setenv("HOME", str(tmp_path / "home"))
    assert cd.cache_dir() == tmp_path / "home" / ".cache" / "broker-emu"
    clean_env.setenv("XDG_CACHE_HOME", "relative/xdg")          # not absolute: ignored, as the spec says
    assert cd.cache_dir() == tmp_path / "home" / ".cache" / "broker-emu"


def test_the_install_hint_names_the_script_in_a_checkout_and_is_honest_when_installed(clean_env, tmp_path):
    assert cd.install_hint("dev/build-adapters/go") == "bash dev/build-adapters/go"
    _installed(clean_env, tmp_path)
    clean_env.setenv("HOME", str(tmp_path / "home"))
    hint = cd.install_hint("dev/build-adapters/go")
    assert "not in the installed package" in hint and "README" in hint
    assert f"BROKER_EMU_CACHE={tmp_path / 'home' / '.cache' / 'broker-emu'} bash dev/build-adapters/go" in hint


def test_only_the_cache_module_names_the_cache_folder():
    """Every other module asks conformance/cache_dir.py: none joins ".cache" to a path of its own."""
    import ast

    found = []
    for top in ("broker_emu", "client", "conformance", "kafka_common", "tools", "benchmarks", "tests"):
        for path in (CHECKOUT / top).rglob("*.py"):
            if path == CHECKOUT / "conformance" / "cache_dir.py" or path.parent == Path(__file__).parent:
                continue
            found += [f"{path.relative_to(CHECKOUT)}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text()))
                      if isinstance(node, ast.Constant) and node.value == ".cache"]
    assert found == []
