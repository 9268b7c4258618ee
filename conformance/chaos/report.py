"""The chaos report in docs/chaos.md, generated, not written by hand: anomaly counts per client
and fault kind, the mutation table, and witnesses as timelines.

Two steps, so the check is cheap. ``extract`` reads what the runs left — campaign outputs
(``broker-emu campaign ... --out DIR``: the run rows and violation events under
``DIR/traces``), ``broker-emu chaos --json`` files of real-time clients, ``--json`` files of
planted-bug runs (the mutation table: one file per planted bug, and the runs with nothing
planted), and ``broker-emu chaos --broker kafka --json`` files (Apache Kafka) — and stores the figures the report needs in ``docs/chaos-report.json``
(small: counts and a few witnesses). ``write`` renders that file into docs/chaos.md between
``<!-- chaos-report -->`` and ``<!-- /chaos-report -->``; ``check`` renders and compares (exit 1
when the page is stale; tests/conformance/chaos/test_chaos_report.py runs it).

    python -m conformance.chaos.report extract --campaign out/scale/out-default \\
        --chaos-json out/real/java.json --mutation out/lso-at-high-100.json
    python -m conformance.chaos.report extract --update --mutation out/mutation/lose-ack.json ... \
        --kafka-json out/kafka-chaos/default.json --kafka-json out/kafka-chaos/txn.json
    python -m conformance.chaos.report write

``--update`` keeps the stored sections no input was given for (the campaign figures when only
the mutation table and the Kafka runs are measured again).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from collections import Counter, defaultdict
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "chaos.md"
DATA = ROOT / "docs" / "chaos-report.json"
BLOCK = re.compile(r"(<!-- chaos-report -->\n)(.*?)(<!-- /chaos-report -->)", re.S)
HISTORY = "client history: no "
KINDS = ("leader", "truncate", "bounce", "black_hole", "lost_answer", "stall", "lag", "cut")
# on Apache Kafka (conformance/chaos/kafka_faults.py KAFKA_KINDS, in the report's order)
KAFKA_KINDS = ("leader", "bounce", "pause", "black_hole", "lost_answer", "lost_request", "delay", "isolate")
WITNESS = re.compile(r"#(?P<index>\d+) t=(?P<t>[\d.]+) (?P<process>\S+) (?P<rest>.*)")


# -- extract: from what the runs left to the report's figures ------------------------------------

def campaign_seeds(directory: str) -> list[dict[str, Any]]:
    """One dict per chaos seed of a campaign output: client, workload, seed, status, actions and
    the anomaly classes its violation events name, with their first witness."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(pathlib.Path(directory) / "traces"), format="parquet", partitioning="hive").to_table(
        filter=ds.field("family") == "Chaos")
    rows = table.to_pylist()
    seeds: dict[Any, dict[str, Any]] = {}
    for row in rows:
        if row["record"] == "run":
            params = json.loads(row["params"] or "{}")
            seeds[row["run_id"]] = {"client": row["client"], "workload": "txn" if params.get("txn") else "default",
                                    "seed": row["seed"], "status": row["status"],
                                    "actions": json.loads(row["actions"] or "{}"), "anomalies": {}}
    for row in rows:
        if row["record"] == "event" and row["kind"] == "violation" and row["run_id"] in seeds:
            details = json.loads(row["details"] or "{}")
            contract = details.get("contract", "")
            name = contract[len(HISTORY):] if contract.startswith(HISTORY) else contract
            seeds[row["run_id"]]["anomalies"][name] = {"count": details.get("count", 1),
                                                       "witness": details.get("detail", [])}
    return list(seeds.values())


def json_seeds(path: str, workload: str = "default") -> list[dict[str, Any]]:
    """The same from ``broker-emu chaos --json`` (a real-time client's seeds)."""
    out = []
    for r in json.loads(pathlib.Path(path).read_text()):
        check = r.get("history_check", {})
        judged = check.get("judged", [])
        named = {kind: {"count": n, "witness": _example(check, kind)}
                 for kind, n in check.get("counts", {}).items() if n and kind in judged}
        broken = {k: r["totals"][k] for k in r.get("judged", []) if r.get("totals", {}).get(k)}
        broken |= {k: r[k] for k in ("consumer_missed", "consumer_wrong") if r.get(k)}
        named |= {f"accounting: {k}": {"count": n, "witness": []} for k, n in broken.items()}
        # a seed in which no record was sent tested nothing (its clients did not start): an error
        error = r.get("error") or not r.get("totals", {}).get("sent", 1)
        out.append({"client": r["client"], "workload": r.get("workload", workload), "seed": r["seed"],
                    "status": "error" if error else "fail" if named else "pass", "actions": r["actions"],
                    "anomalies": named})
    return out


def _example(check: dict, kind: str) -> list[str]:
    found = check.get("examples", {}).get(kind, [])
    return [found[0]["what"], *found[0]["witness"]] if found else []


def mutation_row(paths: str | list[str], expected: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """A planted bug's row from its runs' ``--json`` (one file, or several runs of the same plant
    and workload over parts of the seeds: a seed run twice counts once, its first run — in
    virtual time a seed's counts are a function of its number): seeds, fired, named, other
    classes, and the first witness of the expected class."""
    seeds, seen = [], set()
    for path in [paths] if isinstance(paths, str) else paths:
        for r in json.loads(pathlib.Path(path).read_text()):
            if r["seed"] not in seen:
                seen.add(r["seed"])
                seeds.append(r)
    seeds.sort(key=lambda r: r["seed"])
    plant = next((r["plant"]["name"] for r in seeds if r.get("plant")), "")
    want = expected.get(plant, ())
    # the runs say their workload (broker-emu chaos --json); older ones did not: every plant ran with --txn
    workload = next((r["workload"] for r in seeds if r.get("workload")), "txn" if plant else "default")
    row: dict[str, Any] = {"plant": plant, "workload": workload, "expected": list(want), "seeds": len(seeds),
                           "fired": 0, "named": 0, "any": 0, "old": 0, "other": Counter(), "missed": [], "witness": []}
    for r in seeds:
        # the old counters: the accounting's judged counts, or the consumer against the log
        row["old"] += bool(any(r.get("totals", {}).get(k) for k in r.get("judged", []))
                           or r.get("consumer_missed") or r.get("consumer_wrong"))
        check = r.get("history_check", {})
        named = {k for k, n in check.get("counts", {}).items() if n and k in check.get("judged", [])}
        row["any"] += bool(named)
        row["other"].update(named - set(want))
        if r.get("plant", {}).get("fired"):
            row["fired"] += 1
            hit = sorted(named & set(want))
            row["named"] += bool(hit)
            if not hit:
                row["missed"].append(r["seed"])
            elif not row["witness"]:
                row["witness"] = _example(check, hit[0])
    row["other"] = dict(sorted(row["other"].items()))
    return row


def summarize(seeds: list[dict[str, Any]], kind_names: tuple[str, ...] = KINDS) -> list[dict[str, Any]]:
    """Per client and workload: seeds, failed, errors, the anomaly classes (seeds naming each),
    per fault kind the seeds it fired in and how many of those named an anomaly; and the first
    witness of each class."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in seeds:
        groups[s["client"], s["workload"]].append(s)
    out = []
    for (client, workload), group in sorted(groups.items()):
        kinds = {kind: [sum(1 for s in group if s["actions"].get(kind)),
                        sum(1 for s in group if s["actions"].get(kind) and s["anomalies"])] for kind in kind_names}
        classes: Counter = Counter(k for s in group for k in s["anomalies"])
        witnesses: dict[str, dict[str, Any]] = {}
        for s in sorted(group, key=lambda s: s["seed"]):
            for kind, found in s["anomalies"].items():
                witnesses.setdefault(kind, {"seed": s["seed"], "witness": found["witness"]})
        out.append({"client": client, "workload": workload, "seeds": len(group),
                    "first_seed": min(s["seed"] for s in group), "last_seed": max(s["seed"] for s in group),
                    "with_anomaly": sum(1 for s in group if s["anomalies"]),
                    "errors": sum(1 for s in group if s["status"] == "error"),
                    "kinds": kinds, "classes": dict(sorted(classes.items())), "witnesses": witnesses})
    return out


def extract(campaigns: list[str], chaos_jsons: list[str], mutations: list[str], txn_jsons: tuple[str, ...] | list[str] = (),
            kafka_jsons: tuple[str, ...] | list[str] = (), keep: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's figures from these outputs; with ``keep`` (the figures extracted before), what
    these outputs do not measure again stays: the rows of the other clients and workloads, the
    mutation rows of planted bugs not run again, the Kafka rows of the clients and workloads not
    run on Kafka again.
    A campaign of some clients adds to the report, not replaces it."""
    from conformance.chaos.mutation import EXPECTED

    seeds = [s for d in campaigns for s in campaign_seeds(d)] + [s for f in chaos_jsons for s in json_seeds(f)] \
        + [s for f in txn_jsons for s in json_seeds(f, "txn")]
    clients = summarize(seeds)
    mutation = [mutation_row(fs, EXPECTED) for fs in _by_row(mutations)]
    kafka = summarize([s for f in kafka_jsons for s in json_seeds(f)], KAFKA_KINDS)
    if keep is not None:
        clients = _merge_groups(keep.get("clients", []), clients)
        mutation = _merge_rows(keep.get("mutation", []), mutation) if mutations else keep.get("mutation", mutation)
        kafka = _merge_groups(keep.get("kafka", []), kafka)
    return {"clients": clients, "mutation": mutation, "kafka": kafka}


def _merge_groups(stored: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new rows, and the stored rows of the clients and workloads not measured again."""
    if not new:
        return stored
    fresh = {(c["client"], c["workload"]) for c in new}
    return sorted(new + [c for c in stored if (c["client"], c["workload"]) not in fresh],
                  key=lambda c: (c["client"], c["workload"]))


def _row_key(row: dict[str, Any]) -> tuple[str, str]:
    return row["plant"], row.get("workload", "txn")   # rows stored before the workload was kept: every plant ran --txn


def _merge_rows(stored: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new rows, and the stored rows of planted bugs not measured again; nothing planted
    first, then the planted bugs in broker_emu/plants.py's order."""
    from broker_emu.plants import PLANTS

    rows = {_row_key(r): r for r in stored} | {_row_key(r): r for r in new}
    order = ["", *PLANTS]
    return sorted(rows.values(), key=lambda r: (order.index(r["plant"]) if r["plant"] in order else len(order),
                                                r.get("workload", "txn")))


def _by_row(paths: list[str]) -> list[list[str]]:
    """The ``--mutation`` files grouped by (planted bug, workload), in the order first given."""
    rows: dict[tuple[str, str], list[str]] = {}
    for path in paths:
        seeds = json.loads(pathlib.Path(path).read_text())
        first = seeds[0] if seeds else {}
        key = (first.get("plant", {}).get("name", ""), first.get("workload", ""))
        rows.setdefault(key, []).append(path)
    return list(rows.values())


# -- render: the figures as markdown --------------------------------------------------------------

def timeline(witness: list[str], width: int = 56) -> list[str]:
    """A witness (its line, then ``#index t=... process what`` per operation) as one lane per
    process on one time axis, in a code block."""
    ops = [m.groupdict() for m in map(WITNESS.match, witness[1:]) if m]
    lanes = list(dict.fromkeys(op["process"] for op in ops))
    head = "   t (s)  " + "".join(f"{lane:<{width}}" for lane in lanes)
    lines = ["```", witness[0] if witness else "", "", head.rstrip()]
    for op in sorted(ops, key=lambda op: (float(op["t"]), int(op["index"]))):
        text = f"#{op['index']} {op['rest']}"
        text = text if len(text) < width - 1 else text[:width - 2].rstrip() + "…"
        cell = lanes.index(op["process"]) * width
        lines.append((f"{float(op['t']):8.3f}  " + " " * cell + text).rstrip())
    return lines + ["```"]


def _seeds(c: dict[str, Any]) -> str:
    return f"{c['seeds']:,} ({c['first_seed']}–{c['last_seed']})"


def render(data: dict[str, Any]) -> str:
    out = ["Generated by `python -m conformance.chaos.report write` from `docs/chaos-report.json` (which",
           "`python -m conformance.chaos.report extract` reads from the campaign outputs and `--json` files);",
           "do not edit.", "", "**Seeds and anomalies per client** (judged anomaly classes of the history checker,",
           "or of the accounting: a seed counts once however many it names):", "",
           "| client | workload | seeds | seeds with an anomaly | errors | classes named (seeds) |",
           "|---|---|---|---|---|---|"]
    for c in data["clients"]:
        classes = ", ".join(f"{k} {n}" for k, n in c["classes"].items()) or "—"
        out.append(f"| {c['client']} | {c['workload']} | {_seeds(c)} | **{c['with_anomaly']}** | {c['errors']} "
                   f"| {classes} |")
    out += ["", "**Per fault kind**: seeds in which the kind fired, and (in brackets) how many of those named an "
            "anomaly:", "", "| client | workload | " + " | ".join(f"`{k}`" for k in KINDS) + " |",
            "|---|---|" + "---|" * len(KINDS)]
    for c in data["clients"]:
        cells = " | ".join(f"{fired} ({bad})" for fired, bad in (c["kinds"][k] for k in KINDS))
        out.append(f"| {c['client']} | {c['workload']} | {cells} |")
    out += _mutation(data["mutation"]) + _kafka(data.get("kafka", [])) + _witnesses(data)
    return "\n".join(out) + "\n"


def _mutation(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = ["", "**Planted bugs** (`broker-emu chaos --txn --plant NAME --json FILE`; nothing planted: "
           "`broker-emu chaos [--txn] --json FILE`). *Old counters*: seeds the accounting or the consumer check "
           "flagged too:", "",
           "| planted bug | workload | seeds | fired in | named (expected class) | seeds with any anomaly | "
           "other classes named (seeds) | fired, not named | old counters |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        other = ", ".join(f"{k} {n}" for k, n in r["other"].items()) or "—"
        missed = ", ".join(map(str, r["missed"])) or "—"
        workload = r.get("workload", "txn")
        old = r.get("old", "—")
        if not r["plant"]:
            out.append(f"| none | {workload} | {r['seeds']} | — | — | **{r['any']}** | {other} | — | {old} |")
            continue
        out.append(f"| `{r['plant']}` | {workload} | {r['seeds']} | {r['fired']} | **{r['named']}/{r['fired']}** "
                   f"({' or '.join(r['expected'])}) | {r['any']} | {other} | {missed} | {old} |")
    return out


def _kafka(groups: list[dict[str, Any]]) -> list[str]:
    if not groups:
        return []
    out = ["", "**On Apache Kafka 4.4** (`broker-emu chaos --broker kafka [--client NAME] [--txn] --json FILE`: a fresh 3-node "
           "cluster per seed behind the proxy, real time), seeds and anomalies as above:", "",
           "| client | workload | seeds | seeds with an anomaly | errors | classes named (seeds) |", "|---|---|---|---|---|---|"]
    for c in groups:
        classes = ", ".join(f"{k} {n}" for k, n in c["classes"].items()) or "—"
        out.append(f"| {c['client']} | {c['workload']} | {_seeds(c)} | **{c['with_anomaly']}** | {c['errors']} "
                   f"| {classes} |")
    out += ["", "Per fault kind on Kafka (seeds it fired in, and how many of those named an anomaly):", "",
            "| client | workload | " + " | ".join(f"`{k}`" for k in KAFKA_KINDS) + " |", "|---|---|" + "---|" * len(KAFKA_KINDS)]
    for c in groups:
        cells = " | ".join(f"{fired} ({bad})" for fired, bad in (c["kinds"].get(k, [0, 0]) for k in KAFKA_KINDS))
        out.append(f"| {c['client']} | {c['workload']} | {cells} |")
    return out


def _witnesses(data: dict[str, Any]) -> list[str]:
    out = []
    for c in data["clients"]:
        for kind, found in c["witnesses"].items():
            out += ["", f"**{kind}**, {c['client']} ({c['workload']}), seed {found['seed']}:", "",
                    *timeline(found["witness"])]
    for c in data.get("kafka", []):
        for kind, found in c["witnesses"].items():
            out += ["", f"**{kind}** on Apache Kafka, {c['client']} ({c['workload']}), seed {found['seed']}:", "",
                    *timeline(found["witness"])]
    for r in data["mutation"]:
        if r["witness"]:
            out += ["", f"**{r['expected'][0]}** with `{r['plant']}` planted, its first seed's witness:", "",
                    *timeline(r["witness"])]
    return out


def fresh_page(page: str, data: dict[str, Any]) -> str:
    m = BLOCK.search(page)
    if m is None:
        raise SystemExit(f"{PAGE}: no <!-- chaos-report --> ... <!-- /chaos-report --> block")
    return page[:m.start(2)] + render(data) + page[m.end(2):]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.chaos.report", description=__doc__.split("\n\n")[0])
    p.add_argument("step", choices=("extract", "write", "check"))
    p.add_argument("--campaign", action="append", default=[], help="a campaign output directory (extract)")
    p.add_argument("--chaos-json", action="append", default=[], help="broker-emu chaos --json of a client (extract)")
    p.add_argument("--chaos-json-txn", action="append", default=[],
                   help="broker-emu chaos --txn --json of a client: its transactional workload (extract)")
    p.add_argument("--keep", action="store_true",
                   help="extract: keep the rows of --data for the clients and workloads not in these outputs")
    p.add_argument("--mutation", action="append", default=[], help="broker-emu chaos --plant X --json (extract)")
    p.add_argument("--kafka-json", action="append", default=[], help="broker-emu chaos --broker kafka --json (extract)")
    p.add_argument("--update", action="store_true",
                   help="extract: the same as --keep (what these outputs do not measure again stays)")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--page", default=str(PAGE))
    args = p.parse_args(argv)
    if args.step == "extract":
        stored = pathlib.Path(args.data)
        keep = json.loads(stored.read_text()) if (args.keep or args.update) and stored.exists() else None
        data = extract(args.campaign, args.chaos_json, args.mutation, args.chaos_json_txn, args.kafka_json, keep)
        pathlib.Path(args.data).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        return 0
    data = json.loads(pathlib.Path(args.data).read_text())
    page = pathlib.Path(args.page).read_text()
    fresh = fresh_page(page, data)
    if args.step == "write":
        pathlib.Path(args.page).write_text(fresh)
        return 0
    if fresh != page:
        print(f"{args.page}: the chaos report is stale: python -m conformance.chaos.report write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
