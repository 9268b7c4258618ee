"""The size limits of tools/check_sizes.py (issue 14.4): the repository keeps them, and the
checker counts what it says it counts."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "tools" / "check_sizes.py")
assert _spec is not None and _spec.loader is not None
check_sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_sizes)


def test_the_packages_keep_the_limits():
    assert check_sizes.main(["check_sizes", str(ROOT)]) == 0


def test_a_long_method_and_a_long_file_are_reported(tmp_path):
    package = tmp_path / "client"
    package.mkdir()
    body = "\n".join(f"        x = {i}" for i in range(60))
    (package / "long.py").write_text(f"class C:\n    def m(self):\n{body}\n" + "\n" * 450)
    (package / "short.py").write_text("def f():\n" + "    pass\n" * 59)   # 60 lines: at the limit
    found = [line for path in check_sizes.source_files(tmp_path) for line in check_sizes.offences(tmp_path, path)]
    assert found == ["client/long.py: 512 lines (file limit 500)",
                     "client/long.py:2: m is 61 lines (function limit 60)"]


def test_generated_messages_are_left_out(tmp_path):
    generated = tmp_path / "client" / "protocol" / "messages"
    generated.mkdir(parents=True)
    (generated / "produce.py").write_text("x = 1\n" * 900)
    assert check_sizes.source_files(tmp_path) == []
