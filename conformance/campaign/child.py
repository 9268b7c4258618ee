"""The child process of one isolated campaign run (conformance/campaign/isolated.py): the run
and scale as JSON on stdin, its rows as one JSON line on stdout."""

from __future__ import annotations

import json
import sys


def main() -> None:
    from conformance.campaign.execute import execute_here

    job = json.loads(sys.stdin.read())
    rows = execute_here(job["run"], job["scale"])
    sys.stdout.write(json.dumps(rows, default=str, separators=(",", ":")) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
