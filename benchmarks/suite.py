"""The virtual-time suite's wall time (not a test): every test that needs neither a third-party
client nor Apache Kafka (``-m "not realclient and not realkafka"``: the emulator and our client in
trio's virtual time, the codec, the control plane), run once in a fresh pytest process.

Run: .venv/bin/python -m benchmarks.suite [--json out/perf/suite.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKERS = "not realclient and not realkafka"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARKERS],
                         cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?)", summary)}
    result = {"markers": MARKERS, "wall_s": round(wall, 1), "cores": os.cpu_count(), "summary": summary, **counts}
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if out.returncode != 0:
        sys.exit(f"the suite failed:\n{out.stdout[-3000:]}")


if __name__ == "__main__":
    main()
