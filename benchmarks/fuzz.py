"""The fuzz campaign: a million hostile frames against a running emulator.

    .venv/bin/python -m benchmarks.fuzz                         # 10^6 frames (the documented long run)
    .venv/bin/python -m benchmarks.fuzz --frames 30000 --seed 7 --json out/fuzz.json

Not a test; the CI variant is tests/benchmarks/test_fuzz_campaign.py (25k frames). docs/fuzzing.md has the
figures of the last long run and how to read them.

Theory of operation
-------------------
The emulator runs as a subprocess, ``broker-emu serve --brokers 3 --topic t:3:3 --control-port 0
--trace FIFO`` (so a death is seen: the process is gone), with its trace written into a named
pipe that a thread here reads to the end: every ``handler_error`` (an exception that escaped a
handler or an encoder; must be 0) and every ``conn_close`` with its reason, however many events
the emulator's in-memory ring has dropped. Its stderr is read too: each handler error is also
logged there, a second count. A sampler reads ``/proc/PID/status`` (VmRSS, and VmHWM, the
kernel's own peak) and checks the process is alive.

``--connections`` trio tasks drive loopback TCP connections, each with its own seeded frame
source (benchmarks/fuzz_frames.py: valid frames of every advertised API and version, real
clients' frames, mutations, hostile lengths, counts and size prefixes, random bytes). Each sends
a batch (pipelined: benign frames first, at most one fuzzy frame last), then reads answers,
matching correlation ids in order, until every frame that expects one is answered, the broker
closes the connection, or ``--batch-timeout`` passes (the connection is then dropped: a stall).
Every answer is decoded with the codec as the request's API and version (an undecodable answer
is an encoder bug). Each frame ends in exactly one outcome:

- ``answered``;
- ``closed``: the broker closed the connection with this frame the first one unanswered;
- ``lost``: behind a closed or stalled frame in the same pipeline, never processed;
- ``silent``: no answer expected (Produce acks=0) and none came;
- ``skipped``: no answer although a later frame's answer came (none expected: the broker answers in order);
- ``stalled``: still unanswered at the batch deadline (a long poll or a wait the mutation made long).

At the end: the emulator's own ``GET /trace?kind=handler_error`` as a third count, a normal
produce + fetch round trip with our client (acks=all to ``t``, read back by offset), VmHWM, then
SIGTERM. Frames are reproducible from ``--seed`` (each connection's frame source is seeded from
it and its index); the interleaving of connections in the broker is not.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from benchmarks.fuzz_emulator import API_VERSIONS, Emulator, advertised_versions, topic_ids
from benchmarks.fuzz_frames import BENIGN, CATEGORIES, I32, Frame, FrameSource
from benchmarks.fuzz_pool import Pool, load_corpus
from client.protocol.codec import decode_response

OUTCOMES = ("answered", "closed", "lost", "silent", "skipped", "stalled")
EXAMPLES_KEPT = 5


# -- accounting (no I/O) --------------------------------------------------------------------------

@dataclass
class Ledger:
    by_category: dict[str, collections.Counter] = field(
        default_factory=lambda: {c: collections.Counter() for c in CATEGORIES})
    by_kind: dict[tuple[str, str], collections.Counter] = field(default_factory=lambda: collections.defaultdict(collections.Counter))
    connections: int = 0
    connect_failures: int = 0
    unmatched_answers: int = 0
    bad_answers: list[dict[str, str]] = field(default_factory=list)
    bad_answer_count: int = 0
    benign_closes: list[dict[str, str]] = field(default_factory=list)
    # benign frames the broker closed on, by the kind of the batch's last frame
    benign_closed_behind: collections.Counter = field(default_factory=collections.Counter)

    def count(self, frame: Frame, what: str, last: Frame | None = None) -> None:
        self.by_category[frame.category][what] += 1
        kinds = frame.kind.split("+") if frame.category == "mutated" else [frame.kind]
        for kind in kinds:
            self.by_kind[(frame.category, kind)][what] += 1
        if what == "closed" and frame.category in BENIGN:
            if last is None or last is frame:
                behind = "itself"
            elif last.category in BENIGN or last.category == "mutated":
                behind = last.category
            else:
                behind = f"{last.category}/{last.kind}"
            self.benign_closed_behind[behind] += 1
            if behind == "itself" and len(self.benign_closes) < EXAMPLES_KEPT:
                self.benign_closes.append({"kind": frame.kind, "frame": frame.data[4:].hex()})

    def bad_answer(self, frame: Frame, answer: bytes, error: str) -> None:
        self.bad_answer_count += 1
        if len(self.bad_answers) < EXAMPLES_KEPT:
            self.bad_answers.append({"kind": frame.kind, "request": frame.data.hex(), "answer": answer.hex(), "error": error})

    def total(self, what: str) -> int:
        return sum(c[what] for c in self.by_category.values())


def check_answer(frame: Frame, answer: bytes, api_versions_range: tuple[int, int]) -> str | None:
    """Why the answer does not decode as the request's API and version, or None."""
    claimed = frame.claimed
    if claimed is None:
        return "an answer to a frame without a header"
    key, version = claimed
    if key == API_VERSIONS and not api_versions_range[0] <= version <= api_versions_range[1]:
        version = 0     # KIP-511: a too-new ApiVersions is answered in the v0 layout
    try:
        decode_response(key, version, answer)
    except Exception as exc:  # noqa: BLE001 — whatever the codec says is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


class Pipeline:
    """One connection's frames in flight, in order, and the answers split from the stream."""

    def __init__(self, ledger: Ledger, api_versions_range: tuple[int, int]):
        self.ledger, self.range = ledger, api_versions_range
        self.pending: collections.deque[Frame] = collections.deque()
        self.buffer = bytearray()

    def sent(self, frames: list[Frame]) -> None:
        for f in frames:
            self.ledger.count(f, "sent")
        self.pending.extend(frames)

    def awaiting(self) -> bool:
        return any(not f.silent for f in self.pending)

    def received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 4:
            size = I32.unpack_from(self.buffer, 0)[0]
            if len(self.buffer) < 4 + size:
                return
            answer = bytes(self.buffer[4:4 + size])
            del self.buffer[:4 + size]
            self.answer(answer)

    def answer(self, answer: bytes) -> None:
        cid = I32.unpack_from(answer, 0)[0] if len(answer) >= 4 else None
        if not any(f.correlation_id == cid for f in self.pending):
            self.ledger.unmatched_answers += 1
            return
        while self.pending:
            f = self.pending.popleft()
            if f.correlation_id == cid:
                self.ledger.count(f, "answered")
                error = check_answer(f, answer, self.range)
                if error:
                    self.ledger.bad_answer(f, answer, error)
                return
            self.ledger.count(f, "silent" if f.silent else "skipped")

    def ended(self, how: str) -> None:
        """The connection ended: ``closed`` by the broker, ``stalled`` (we gave up), or ``done``."""
        first = True
        while self.pending:
            f = self.pending.popleft()
            if how == "done" or (f.silent and how == "stalled"):
                self.ledger.count(f, "silent" if f.silent else "skipped")
            elif first:
                self.ledger.count(f, how, self.pending[-1] if self.pending else f)
                first = False
            else:
                self.ledger.count(f, "lost")


# -- the campaign ---------------------------------------------------------------------------------

@dataclass
class Options:
    frames: int = 1_000_000
    seconds: float | None = None
    seed: int = 1
    connections: int = 48
    max_pipeline: int = 8
    batch_timeout: float = 2.0
    examples: int = 24          # hypothesis bodies per advertised (API, version)
    progress: float = 10.0      # seconds between progress lines; 0: none
    sample_every: float = 0.5   # seconds between memory samples
    emulator_root: str | None = None   # run the emulator of another checkout (default: this one)
    config: dict[str, str] = field(default_factory=dict)   # more --config KEY=VALUE for serve


@dataclass
class Run:
    options: Options
    emulator: Emulator
    pool: Pool
    ledger: Ledger
    api_versions_range: tuple[int, int]
    log: Callable[[str], None]
    stopping: bool = False
    death: int | None = None
    started: float = 0.0
    samples: list[tuple[float, int, int]] = field(default_factory=list)   # (s, frames sent, rss)
    digests: list[Any] = field(default_factory=list)   # per connection task: SHA-256 of its frames

    def frames_digest(self) -> str:
        """One SHA-256 over every frame sent, connection task by task: equal for equal seeds."""
        return hashlib.sha256(b"".join(d.digest() for d in self.digests)).hexdigest()

    def sent(self) -> int:
        return self.ledger.total("sent")

    def should_stop(self) -> bool:
        if self.options.seconds is not None and trio.current_time() - self.started >= self.options.seconds:
            self.stopping = True
        return self.stopping


async def send_batch(stream: trio.SocketStream, frames: list[Frame], pipeline: Pipeline, deadline: float) -> str:
    """Send one batch and read until it is settled: ``open``, ``closed`` or ``stalled``."""
    pipeline.sent(frames)
    try:
        with trio.move_on_at(deadline) as scope:
            await stream.send_all(b"".join(f.data for f in frames))
            if frames[-1].eof:
                await stream.send_eof()
            while pipeline.awaiting():
                data = await stream.receive_some(1 << 16)
                if not data:
                    pipeline.ended("closed")
                    return "closed"
                pipeline.received(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pipeline.ended("closed")
        return "closed"
    if scope.cancelled_caught:
        pipeline.ended("stalled")
        return "stalled"
    return "closed" if frames[-1].eof else "open"


async def connect(address: tuple[str, int]) -> trio.SocketStream:
    """A loopback connection without open_tcp_stream's resolving and happy eyeballs (thousands of
    connections a run: a third of the harness's time otherwise)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    try:
        await sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def connection_task(run: Run, index: int, budget: int) -> None:
    # two generators: the frames (and batch sizes) depend on the seed alone, whatever the broker
    # answers; which broker each new connection goes to depends on how often the broker closes
    rng = random.Random(f"{run.options.seed}:{index}")
    pick = random.Random(f"{run.options.seed}:{index}:brokers")
    source = FrameSource(run.pool, rng, first_correlation_id=(index << 24) + 1)
    brokers = run.emulator.brokers
    digest = run.digests[index]
    while budget > 0 and not run.should_stop():
        try:
            stream = await connect(pick.choice(brokers))
        except OSError:
            run.ledger.connect_failures += 1
            if not run.emulator.alive():
                return
            await trio.sleep(0.05)
            continue
        run.ledger.connections += 1
        pipeline = Pipeline(run.ledger, run.api_versions_range)
        async with stream:
            state = "open"
            while state == "open" and budget > 0 and not run.should_stop():
                frames = source.batch(rng.randint(1, run.options.max_pipeline))[:budget]
                budget -= len(frames)
                for f in frames:
                    digest.update(f.data)
                state = await send_batch(stream, frames, pipeline, trio.current_time() + run.options.batch_timeout)
            if state == "open":
                pipeline.ended("done")


async def watch(run: Run) -> None:
    """Memory samples, the liveness check and progress lines, until the campaign ends."""
    last_print, last_sent = trio.current_time(), 0
    while True:
        now = trio.current_time()
        if not run.emulator.alive():
            run.death = run.emulator.proc.returncode
            run.stopping = True
            run.log(f"the emulator died (exit code {run.death})")
            return
        rss = run.emulator.memory().get("VmRSS", 0)
        run.samples.append((round(now - run.started, 2), run.sent(), rss))
        if run.options.progress and now - last_print >= run.options.progress:
            sent = run.sent()
            rate = (sent - last_sent) / (now - last_print)
            run.log(f"[{now - run.started:6.0f}s] {sent:,} frames ({rate:,.0f}/s), "
                    f"{run.ledger.total('answered'):,} answers, {run.ledger.total('closed'):,} closes, "
                    f"RSS {rss / 2**20:.0f} MiB, handler errors {run.emulator.tap.handler_error_count}")
            last_print, last_sent = now, sent
        await trio.sleep(run.options.sample_every)


async def drive(run: Run) -> float:
    n = run.options.connections
    budgets = [run.options.frames // n + (1 if i < run.options.frames % n else 0) for i in range(n)]
    run.started = trio.current_time()
    run.digests = [hashlib.sha256() for _ in range(n)]
    async with trio.open_nursery() as outer:
        outer.start_soon(watch, run)
        async with trio.open_nursery() as nursery:
            for i, budget in enumerate(budgets):
                nursery.start_soon(connection_task, run, i, budget)
        elapsed = trio.current_time() - run.started
        outer.cancel_scope.cancel()
    return elapsed


def round_trip(bootstrap: str, seed: int) -> dict[str, Any]:
    """A normal produce (acks=all) and fetch with our client, after the campaign."""
    import client

    value = f"fuzz-round-trip-{seed}-{time.time_ns()}".encode()
    try:
        with client.Producer({"bootstrap.servers": bootstrap, "acks": "all", "delivery.timeout.ms": 30000}) as p:
            meta = p.send("t", value, partition=0).result(timeout=40)
        with client.Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False}) as c:
            c.assign([("t", meta.partition)])
            c.seek(("t", meta.partition), meta.offset)
            deadline = time.monotonic() + 20   # real time: the blocking client runs in its own thread
            while time.monotonic() < deadline:
                for r in c.poll(1.0):
                    if r.offset == meta.offset:
                        return {"ok": r.value == value, "partition": meta.partition, "offset": meta.offset}
        return {"ok": False, "error": f"offset {meta.offset} not fetched within 20 s"}
    except Exception as exc:  # noqa: BLE001 — the report says what failed
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def run_campaign(options: Options, log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Start an emulator, fuzz it, check it, stop it; the summary as a JSON-able dict."""
    with tempfile.TemporaryDirectory(prefix="broker-emu-fuzz-") as tmp:
        t0 = time.monotonic()
        emulator = Emulator(Path(tmp), options.config, root=options.emulator_root)
        try:
            advertised = advertised_versions(emulator.brokers[0])
            log(f"emulator pid {emulator.proc.pid} at {emulator.bootstrap}; {len(advertised)} APIs advertised; "
                f"building the frame pool (seed {options.seed}, {options.examples} bodies per API version)")
            pool = Pool.build(advertised, options.seed, options.examples, load_corpus(), topic_ids(emulator))
            baseline = emulator.memory().get("VmRSS", 0)
            run = Run(options, emulator, pool, Ledger(), advertised.get(API_VERSIONS, (0, 0)), log)
            setup = time.monotonic() - t0
            elapsed = trio.run(drive, run)
            alive = emulator.alive()
            time.sleep(0.5)     # the trace tap catches up with the last events
            memory = emulator.memory()
            ring = emulator.control_get("/trace?kind=handler_error") if alive else []
            topics = len(emulator.control_get("/cluster")["topics"]) if alive else None
            trip = round_trip(emulator.bootstrap, options.seed) if alive else {"ok": False, "error": "the emulator is dead"}
            alive = alive and emulator.alive()
        finally:
            exit_code = emulator.stop()
        out = summary(run, elapsed, setup, baseline, memory, alive, exit_code, ring, trip, emulator)
        out["topics_at_end"] = topics   # auto-created and CreateTopics'd by the frames
        return out


def summary(run: Run, elapsed: float, setup: float, baseline: int, memory: dict[str, int], alive: bool,
            exit_code: int, ring: list, trip: dict[str, Any], emulator: Emulator) -> dict[str, Any]:
    ledger, tap = run.ledger, emulator.tap
    cpu = emulator.cpu_seconds
    rss = [s[2] for s in run.samples if s[2]]
    tenth = next((s[2] for s in run.samples if s[1] >= run.sent() / 10), 0)
    timeline = [next((s for s in run.samples if s[1] >= run.sent() * k / 10), run.samples[-1]) for k in range(1, 11)] \
        if run.samples else []
    return {
        "seed": run.options.seed, "options": vars(run.options), "command": " ".join(emulator.command),
        "seconds": round(elapsed, 1), "setup_seconds": round(setup, 1),
        "frames": run.sent(), "frames_sha256": run.frames_digest(), "frames_per_second": round(run.sent() / elapsed) if elapsed else 0,
        "answers": ledger.total("answered"), "closes": ledger.total("closed"),
        "outcomes": {o: ledger.total(o) for o in OUTCOMES},
        "by_category": {c: dict(n) for c, n in ledger.by_category.items()},
        "by_kind": {f"{c}/{k}": dict(n) for (c, k), n in sorted(ledger.by_kind.items())},
        "connections": ledger.connections, "connect_failures": ledger.connect_failures,
        "unmatched_answers": ledger.unmatched_answers,
        "bad_answers": ledger.bad_answer_count, "bad_answer_examples": ledger.bad_answers,
        "benign_closes": ledger.benign_closes, "benign_closed_behind": dict(ledger.benign_closed_behind.most_common()),
        "cpu_seconds": {"emulator": cpu, "harness": round(time.process_time(), 1)},
        "handler_errors": tap.handler_error_count, "handler_errors_logged": emulator.stderr.handler_errors,
        "handler_errors_in_ring": len(ring), "handler_error_signatures": dict(tap.signatures.most_common()),
        "handler_error_examples": tap.handler_errors,
        "trace_events": tap.events, "request_anomalies": tap.anomalies,
        "close_reasons": dict(tap.close_reasons.most_common()),
        "deaths": 0 if run.death is None and alive else 1, "alive_at_end": alive, "exit_code": exit_code,
        "memory": {"baseline_rss": baseline, "rss_after_10_percent": tenth, "peak_rss": memory.get("VmHWM", max(rss, default=0)),
                   "max_sampled_rss": max(rss, default=0), "final_rss": memory.get("VmRSS", 0),
                   "timeline": [{"seconds": t, "frames": n, "rss": r} for t, n, r in timeline]},
        "round_trip": trip,
        "stderr_tail": list(emulator.stderr.tail)[-10:],
    }


def table(s: dict[str, Any]) -> str:
    mib = lambda b: f"{b / 2**20:.0f} MiB"
    lines = [f"fuzz campaign, seed {s['seed']}: {s['frames']:,} frames in {s['seconds']} s "
             f"({s['frames_per_second']:,}/s; {s['setup_seconds']} s set-up)",
             f"frames sha256 {s['frames_sha256'][:16]}... (the same for the same seed and options)", "",
             f"{'category':10} {'sent':>10} " + " ".join(f"{o:>9}" for o in OUTCOMES)]
    for c, n in s["by_category"].items():
        lines.append(f"{c:10} {n.get('sent', 0):>10,} " + " ".join(f"{n.get(o, 0):>9,}" for o in OUTCOMES))
    lines.append(f"{'total':10} {s['frames']:>10,} " + " ".join(f"{s['outcomes'][o]:>9,}" for o in OUTCOMES))
    m = s["memory"]
    lines += ["",
              f"handler errors       {s['handler_errors']} (trace), {s['handler_errors_logged']} (stderr), "
              f"{s['handler_errors_in_ring']} (GET /trace)",
              *(f"  {n:>9,}  {sig}" for sig, n in s["handler_error_signatures"].items()),
              f"process deaths       {s['deaths']} (exit code {s['exit_code']} after SIGTERM)",
              f"undecodable answers  {s['bad_answers']};  unmatched answers {s['unmatched_answers']}",
              f"peak RSS             {mib(m['peak_rss'])} (baseline {mib(m['baseline_rss'])}, after 10% "
              f"{mib(m['rss_after_10_percent'])}, final {mib(m['final_rss'])})",
              f"round trip           {'ok' if s['round_trip'].get('ok') else 'FAILED: ' + str(s['round_trip'])}",
              f"connections          {s['connections']:,} ({s['connect_failures']} failed to connect)",
              f"CPU seconds          emulator {s['cpu_seconds']['emulator']}, harness {s['cpu_seconds']['harness']}",
              f"trace events         {s['trace_events']:,} ({s['request_anomalies']:,} request anomalies)",
              "", "broker closes by reason:"]
    lines += [f"  {n:>9,}  {reason}" for reason, n in list(s["close_reasons"].items())[:15]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.fuzz", description=__doc__.splitlines()[0])
    d = Options()
    parser.add_argument("--frames", type=int, default=d.frames, help="frames to send (default 10^6)")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long, whatever the count")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--connections", type=int, default=d.connections)
    parser.add_argument("--max-pipeline", type=int, default=d.max_pipeline, help="frames per batch, at most")
    parser.add_argument("--batch-timeout", type=float, default=d.batch_timeout)
    parser.add_argument("--examples", type=int, default=d.examples, help="hypothesis bodies per API version")
    parser.add_argument("--progress", type=float, default=d.progress, help="seconds between progress lines")
    parser.add_argument("--emulator-root", help="a checkout whose broker_emu to fuzz (default: the one on sys.path)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting for serve, on top of the campaign's own (repeatable)")
    parser.add_argument("--json", help="write the JSON summary here instead of to stdout")
    args = parser.parse_args(argv)
    config = dict(item.split("=", 1) for item in args.config)
    options = Options(**{k: v for k, v in vars(args).items() if k not in ("json", "config")}, config=config)
    s = run_campaign(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(table(s))
    text = json.dumps(s, indent=1, default=str)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)
    else:
        print(text)
    ok = s["handler_errors"] == 0 and s["handler_errors_logged"] == 0 and s["deaths"] == 0 and s["round_trip"].get("ok")
    return 0 if ok and s["bad_answers"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
