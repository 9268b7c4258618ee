"""Refresh the corpus of real clients' requests in tests/client/protocol/corpus.

    .venv/bin/python tools/capture_corpus.py                 # every client (a few minutes)
    .venv/bin/python tools/capture_corpus.py kcat kafkajs    # only these; the rest stay

Theory of operation
-------------------
For each client in turn the tool starts a fresh broker-emu cluster (3 brokers, topic ``t`` with
3 partitions and RF 3, telemetry on, no initial rebalance delay) with a *frame tap*: the
server's reader hands the tool every request frame it reads, before decoding it
(``Cluster.frame_tap``, see broker_emu/server.py). Then it drives the client through a rich
session (tools/corpus_sessions/: every codec, acks 0/1/all, idempotence, assign and group
consumption with commits, offsets by time, every admin call the emulator implements); kcat is
driven here, one command per step. One client at a time on its own cluster, so every frame
belongs to the client that ran. Third-party clients also run the scenarios of
tests/realclients/sessions.py (a silent listener, an ApiVersions served only at v0, ...), whose
frames show the fallbacks a session against the emulator never provokes.

What is kept: identical frames once (correlation id ignored); then per API version, frames are
grouped by shape (``corpus_catalog.signature``: which fields are null, empty or set, small
values such as acks and epochs, the codec of each batch) and taken round-robin over the
shapes, at most PER_SHAPE of one shape and PER_VERSION in all. Files are
``corpus/<client>/<ApiName>-v<version>-<n>.bin``, the frame without its size prefix, numbered
in the order the client sent them. MANIFEST.json says which client versions sent them, what
each session step did, counts per API version and what each file covers.

The tool reports frames the emulator would refuse and anomalies (bytes it ignores, tags out of
order) missing from ANOMALIES.json, but never edits that file: a new anomaly is for a person to
look at and explain there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from broker_emu.runtime import run_cluster_in_thread  # noqa: E402
from tests.client.protocol.corpus_catalog import (  # noqa: E402
    ANOMALIES,
    CLIENTS,
    CORPUS,
    MANIFEST,
    Refused,
    api_name,
    categories,
    emulator_reads,
    expected_anomalies,
    file_name,
    signature,
    where,
)
from tests.realclients.clients import installed_version  # noqa: E402
from tests.realclients.sessions import SCENARIOS, session  # noqa: E402

SESSIONS = REPO / "tools" / "corpus_sessions"
PER_SHAPE = 2
PER_VERSION = 12
CLIENT_TIMEOUT_S = 300
TOPICS = [("t", 3, 3)]
# an authorizer that allows what no ACL covers: the sessions' ACL calls work, nothing else is refused
CLUSTER_CONFIG = {"group.initial.rebalance.delay.ms": 0, "emu.telemetry": True, "authorizer.class.name": "StandardAuthorizer",
                  "allow.everyone.if.no.acl.found": True}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass
class Capture:
    client: str
    version: str
    frames: list[bytes] = field(default_factory=list)
    steps: dict[str, str] = field(default_factory=dict)


# -- running one client ---------------------------------------------------------------------------

def capture(client: str) -> Capture:
    frames: list[bytes] = []
    lock = threading.Lock()

    def tap(conn: Any, frame: bytes) -> None:
        with lock:
            frames.append(bytes(frame))

    with run_cluster_in_thread(brokers=3, topics=TOPICS, config=CLUSTER_CONFIG) as tc:
        tc.call(setattr, tc.cluster, "frame_tap", tap)
        version, steps = _drive(client, tc.bootstrap)
        time.sleep(0.5)  # frames a closing client still sends (LeaveGroup, last heartbeat)
        # a handler that raised is an emulator bug whatever the frame: report it with the frames
        for error in tc.call(lambda: [e for e in tc.cluster.trace.events if e.kind == "handler_error"]):
            steps[f"handler_error {error.api} v{error.api_version}"] = str(error.details)[:300]
    with lock:
        cap = Capture(client, version, list(frames), steps)
    if not client.startswith("ours"):
        _add_harness_scenarios(cap)
    return cap


def _add_harness_scenarios(cap: Capture) -> None:
    """What the client sends in tests/realclients' own scenarios (a silent listener, an
    ApiVersions that only serves v0, ...): the fallbacks a rich session against the emulator
    never provokes."""
    for scenario in SCENARIOS:
        s = session(cap.client, scenario)
        cap.frames += [f.data for f in s.frames]
        cap.steps[f"harness {scenario}"] = "; ".join(s.harness_errors) or "ok"


def _drive(client: str, bootstrap: str) -> tuple[str, dict[str, str]]:
    if client == "kcat":
        return installed_version("kcat") or "?", _drive_kcat(bootstrap)
    if client == "kafkajs":
        argv = ["node", str(SESSIONS / "kafkajs.js"), bootstrap]
    else:
        argv = [sys.executable, str(SESSIONS / "python_clients.py"), client, bootstrap]
    proc = _run(argv)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return "?", {"session": f"no result line; exit {proc.returncode}: {proc.stderr[-600:]}"}
    result = json.loads(lines[-1])
    return str(result.get("version", "?")), result.get("steps", {})


def _run(argv: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        return subprocess.run(argv, input=None if stdin is None else stdin.decode(), capture_output=True, text=True,
                              timeout=CLIENT_TIMEOUT_S, cwd=REPO, env=env, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -9, "", f"killed after {CLIENT_TIMEOUT_S} s")


def _kcat_steps(bootstrap: str) -> list[tuple[str, list[str], bytes | None]]:
    # compressible: librdkafka sends a batch uncompressed when compressing does not make it smaller
    lines = b"".join(b"k%d:value-%d-%s\n" % (i, i, b"x" * 100) for i in range(3))
    produce = ["-P", "-t", "t", "-p", "0", "-K:", "-H", "h=1", "-X", "linger.ms=5"]
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    steps: list[tuple[str, list[str], bytes | None]] = [
        ("metadata all", ["-L"], None),
        ("metadata named", ["-L", "-t", "t"], None),
    ]
    steps += [(f"produce {codec}", [*produce, "-z", codec, "-X", "acks=1"], lines) for codec in CODECS]
    steps += [
        ("produce acks=0", [*produce, "-X", "acks=0"], lines),
        ("produce acks=all", [*produce, "-z", "zstd", "-X", "acks=all"], lines),
        ("produce idempotent", [*produce, "-z", "gzip", "-X", "enable.idempotence=true"], lines),
        ("consume by assign", ["-C", "-t", "t", "-p", "0", "-o", "beginning", "-e"], None),
        ("offsets latest", ["-Q", "-t", "t:0:-1"], None),
        ("offsets earliest", ["-Q", "-t", "t:0:-2"], None),
        ("offsets by time", ["-Q", "-t", f"t:0:{an_hour_ago}"], None),
        ("consume in a group", ["-G", "kcat-group", "-o", "beginning", "-e", "-X", "heartbeat.interval.ms=300",
                                "-X", "session.timeout.ms=6000", "-X", "auto.commit.interval.ms=200", "t"], None),
        # without -o the member resumes from the group's commits: OffsetFetch
        ("resume in a group", ["-G", "kcat-group", "-e", "-X", "auto.offset.reset=earliest", "t"], None),
    ]
    return [(name, ["kcat", "-b", bootstrap, "-X", "client.id=corpus-kcat", *args], stdin)
            for name, args, stdin in steps]


def _drive_kcat(bootstrap: str) -> dict[str, str]:
    results = {}
    for name, argv, stdin in _kcat_steps(bootstrap):
        proc = _run(argv, stdin)
        ok = proc.returncode == 0 and "ERROR" not in proc.stderr
        results[name] = "ok" if ok else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return results


# -- choosing what to keep ------------------------------------------------------------------------

@dataclass
class Kept:
    index: int  # position in the capture, for file order
    data: bytes
    categories: list[str]
    anomalies: list[str]
    refused: str | None


def select(frames: list[bytes]) -> list[Kept]:
    """Distinct frames; within each API version, first one of each set of coverage categories,
    then one of each further shape, then the second of each shape (see module doc)."""
    seen: set[bytes] = set()
    groups: dict[tuple[int, int], dict[str, dict[str, list[Kept]]]] = {}
    for index, data in enumerate(frames):
        key = data[:4] + b"\0\0\0\0" + data[8:]  # the correlation id does not make a frame new
        if len(data) < 8 or key in seen:
            continue
        seen.add(key)
        kept = _classify(index, data)
        api = (int.from_bytes(data[0:2], "big", signed=True), int.from_bytes(data[2:4], "big", signed=True))
        covers = kept.refused or "|".join(kept.categories + kept.anomalies)
        shape = kept.refused or _signature(data)
        groups.setdefault(api, {}).setdefault(covers, {}).setdefault(shape, []).append(kept)
    out: list[Kept] = []
    for by_covers in groups.values():
        out += sorted(_pick(by_covers)[:PER_VERSION], key=lambda k: k.index)
    return out


def _pick(by_covers: dict[str, dict[str, list[Kept]]]) -> list[Kept]:
    """Frames of one API version in order of preference: the first of each set of coverage
    categories, then the first of each further shape, then up to PER_SHAPE of each shape."""
    tiers: list[list[Kept]] = [[], [], []]
    for by_shape in by_covers.values():
        for nth_shape, same in enumerate(by_shape.values()):
            for rank, kept in enumerate(same[:PER_SHAPE]):
                tiers[0 if nth_shape == rank == 0 else 1 if rank == 0 else 2].append(kept)
    return [kept for tier in tiers for kept in tier]


def _classify(index: int, data: bytes) -> Kept:
    try:
        header, body, anomalies = emulator_reads(data)
    except Refused as exc:
        return Kept(index, data, [], [], str(exc))
    cats = sorted(categories(header.api_key, header.api_version, body)) if body is not None else [api_name(header.api_key)]
    return Kept(index, data, cats, anomalies, None)


def _signature(data: bytes) -> str:
    header, body, anomalies = emulator_reads(data)
    base = signature(header.api_key, header.api_version, body) if body is not None else "too new"
    return base + ("|anomalies:" + ";".join(anomalies) if anomalies else "")


# -- writing --------------------------------------------------------------------------------------

def write(cap: Capture, kept: list[Kept]) -> dict[str, Any]:
    folder = CORPUS / cap.client
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.bin"):
        old.unlink()
    numbers: dict[tuple[int, int], int] = {}
    files: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for k in kept:
        api = (int.from_bytes(k.data[0:2], "big", signed=True), int.from_bytes(k.data[2:4], "big", signed=True))
        numbers[api] = numbers.get(api, 0) + 1
        name = file_name(*api, numbers[api])
        (folder / name).write_bytes(k.data)
        entry: dict[str, Any] = {"covers": k.categories}
        if k.anomalies:
            entry["anomalies"] = k.anomalies
        if k.refused:
            entry["refused"] = k.refused
        files[name] = entry
        label = f"{api_name(api[0])} v{api[1]}"
        counts[label] = counts.get(label, 0) + 1
    return {"version": cap.version, "client_ids": sorted({_client_id(f) for f in cap.frames}, key=str),
            "frames_captured": len(cap.frames), "frames_kept": len(kept), "steps": cap.steps,
            "counts": dict(sorted(counts.items())), "files": files}


def frame_where(client: str, frame: bytes) -> str:
    return where(client, int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True))


def _client_id(frame: bytes) -> str | None:
    n = int.from_bytes(frame[8:10], "big", signed=True)
    return None if n < 0 else frame[10:10 + n].decode("utf-8", "replace")


def update_manifest(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    clients = manifest.get("clients", {})
    for client, entry in entries.items():
        entry["captured"] = datetime.date.today().isoformat()
        clients[client] = entry
    coverage: dict[str, list[str]] = {}
    for client, entry in clients.items():
        for info in entry["files"].values():
            for cat in info["covers"]:
                coverage.setdefault(cat, [])
                if client not in coverage[cat]:
                    coverage[cat].append(client)
    manifest = {
        "about": "Request frames real clients sent to broker-emu, one file each, without the size prefix.",
        "refresh": ".venv/bin/python tools/capture_corpus.py [CLIENT ...]",
        "cluster": {"brokers": 3, "topics": TOPICS, "config": CLUSTER_CONFIG},
        "coverage": dict(sorted(coverage.items())),
        "clients": {c: clients[c] for c in CLIENTS if c in clients},
    }
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    return manifest


# -- reporting ------------------------------------------------------------------------------------

def report(cap: Capture, kept: list[Kept], known: dict[str, list[str]]) -> list[str]:
    """Lines for the console; problems start with '!'."""
    lines = [f"{cap.client} {cap.version}: {len(cap.frames)} frames, {len(kept)} kept"]
    lines += [f"  {'-' if outcome.startswith('skipped') else '!'} step {name}: {outcome}"
              for name, outcome in cap.steps.items() if outcome != "ok"]
    for k in kept:
        at = frame_where(cap.client, k.data)
        if k.refused:
            lines.append(f"  ! the emulator refuses a frame: {at}: {k.refused}")
        for anomaly in k.anomalies:
            mark = " " if anomaly in known.get(at, []) else "!"
            lines.append(f"  {mark} anomaly {at}: {anomaly}" + ("" if mark == " " else " (not in ANOMALIES.json)"))
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clients", nargs="*", metavar="CLIENT",
                        help=f"clients to refresh (default: all of {', '.join(CLIENTS)})")
    args = parser.parse_args(argv)
    unknown = set(args.clients) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown client(s) {', '.join(sorted(unknown))}; known: {', '.join(CLIENTS)}")
    clients = args.clients or [c for c in CLIENTS if c.startswith("ours") or installed_version(c)]
    known = expected_anomalies(ANOMALIES) if ANOMALIES.exists() else {}
    entries, problems = {}, 0
    for client in clients:
        started = time.time()
        cap = capture(client)
        kept = select(cap.frames)
        entries[client] = write(cap, kept)
        lines = report(cap, kept, known)
        problems += sum(line.lstrip().startswith("!") for line in lines)
        print("\n".join(lines) + f"\n  ({time.time() - started:.0f} s)", flush=True)
    update_manifest(entries)
    total = sum(f.stat().st_size for f in CORPUS.rglob("*.bin"))
    print(f"corpus: {sum(1 for _ in CORPUS.rglob('*.bin'))} frames, {total / 1024:.0f} KiB; {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
