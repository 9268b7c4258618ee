"""Regenerate the console's screenshots in docs/console/ (one per view), from a real
``broker-emu serve``, our producer and Chromium (tools/console_browser.py):

    .venv/bin/python -m tools.console_screenshots [--out docs/console]

What is on screen: topic ``orders`` (1 partition, 3 replicas) with its followers stalled, so an
acks=all produce of ``teaching-client`` waits in the purgatory; a black-hole rule on Metadata
that ``metadata-client`` met (its Metadata requests go unanswered: it closes the connection at
request.timeout.ms and tries again until max.block.ms).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEWS = ("cluster", "connections", "purgatory", "faults", "timeline")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    import client
    from tools.console_browser import ConsoleBrowser

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "console"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", "--brokers", "3", "--topic", "orders:1:3",
                             "--control-port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip().removeprefix("bootstrap=")
        control = proc.stdout.readline().strip().removeprefix("control=")
        with ConsoleBrowser(f"{control}/console") as b:
            b.wait('[data-testid="status"]', text="live")
            with client.Producer({"bootstrap.servers": bootstrap, "client.id": "teaching-client"}) as p:
                for i in range(5):
                    p.send("orders", b"before %d" % i, partition=0).result(10)
            b.click('[data-testid="stall-orders-0"]')
            parked = client.Producer({"bootstrap.servers": bootstrap, "client.id": "teaching-client", "acks": "all",
                                      "request.timeout.ms": 30000, "retries": 0, "linger.ms": 0})
            parked.send("orders", b"waits for the followers", partition=0)
            b.wait('[data-testid="purgatory"] tbody tr[data-testid^="op-teaching-client-"]')
            b.fill('[data-testid="fault-rule"]', '{"match": {"api": "Metadata", "client_id": "metadata-client"}, '
                                                 '"action": {"type": "black_hole"}}')
            b.click('[data-testid="add-fault"]')
            b.wait('[data-testid="fault-1"]')

            def meta() -> None:
                with client.Producer({"bootstrap.servers": bootstrap, "client.id": "metadata-client",
                                      "request.timeout.ms": 2000, "max.block.ms": 5000}) as m:
                    m.send("orders", b"never sent").exception(10)   # MaxBlockTimeoutException: no metadata

            t = threading.Thread(target=meta)
            t.start()
            t.join(20)
            time.sleep(3)   # countdowns run on, the timeline fills
            b.select('[data-testid="timeline-client"]', "metadata-client")
            time.sleep(0.5)
            for view in VIEWS:
                b.screenshot(out / f"{view}.png", selector=f"#{view}")
                print(f"wrote {out / f'{view}.png'}")
            parked.close(0)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
