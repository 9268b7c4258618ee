"""The size limits of tools/check_sizes.py: the repository keeps them, and the checker counts what
it says it counts — lines of code, never comments, docstrings or blank lines."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "tools" / "check_sizes.py")
assert _spec is not None and _spec.loader is not None
check_sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_sizes)


def _found(root: pathlib.Path) -> list[str]:
    return [line for path in check_sizes.source_files(root) for line in check_sizes.offences(root, path)]


def test_the_packages_keep_the_limits():
    assert check_sizes.main(["check_sizes", str(ROOT)]) == 0


def test_a_long_method_and_a_long_file_are_reported(tmp_path):
    package = tmp_path / "client"
    package.mkdir()
    body = "\n".join(f"        x = {i}" for i in range(60))
    (package / "long.py").write_text(f"class C:\n    def m(self):\n{body}\n" + "y = 0\n" * 450)
    (package / "short.py").write_text("def f():\n" + "    pass\n" * 59)   # 60 lines: at the limit
    assert _found(tmp_path) == ["client/long.py: 512 lines of code (file limit 500)",
                                "client/long.py:2: m is 61 lines of code (function limit 60)"]


def test_comments_docstrings_and_blank_lines_are_free(tmp_path):
    package = tmp_path / "client"
    package.mkdir()
    doc = "\n".join("    a docstring line" for _ in range(100))
    why = "\n".join("    # why, at length" for _ in range(100))
    string = 'x = """a string\n    that is code"""\n'     # a string that is not a docstring counts
    source = (f'"""module\n{doc}\n"""\n\n\ndef f():\n    """{doc}\n    """\n{why}\n\n\n'
              + "    pass\n" * 57 + "    " + string + "\n" * 600)
    (package / "explained.py").write_text(source)
    assert _found(tmp_path) == []   # 60 lines of code among 800: at the limit
    (package / "explained.py").write_text(source.replace("    pass\n", "    pass\n" * 2, 1))
    assert _found(tmp_path) == ["client/explained.py:105: f is 61 lines of code (function limit 60)"]


def test_generated_messages_are_left_out(tmp_path):
    generated = tmp_path / "client" / "protocol" / "messages"
    generated.mkdir(parents=True)
    (generated / "produce.py").write_text("x = 1\n" * 900)
    assert check_sizes.source_files(tmp_path) == []
