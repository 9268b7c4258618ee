"""docs/coverage.md (tools/api_coverage.py) must say what the emulator serves today: its
broker-emu column is compared with the emulator's own ApiVersions answer."""

import sys

from tests import ROOT


def test_the_coverage_table_shows_what_the_emulator_advertises():
    sys.path.insert(0, str(ROOT / "tools"))
    from api_coverage import _split, api_versions, emulator

    with emulator() as bootstrap:
        live = api_versions(*_split(bootstrap))
    text = (ROOT / "docs" / "coverage.md").read_text()
    table = text.split("## Every API", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("|")]
    header, body = rows[0], rows[2:]
    col = header.index("broker-emu")
    documented = {int(r[1]): r[col] for r in body}
    want = {key: f"{lo}–{hi}" for key, (lo, hi) in live.items()}
    assert {k: v for k, v in documented.items() if v != "—"} == want, "run tools/api_coverage.py --kafka"
