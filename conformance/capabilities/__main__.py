"""`python -m conformance.capabilities`: print docs/clients.md as the declarations make it;
``--write FILE`` writes it, ``--check FILE`` exits 1 when FILE differs (stale) or an adapter's N/As
and its declaration disagree (conformance/capabilities/check.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def current() -> str:
    from conformance.capabilities.doc import render
    from conformance.runner import default_adapters
    from conformance.scenarios import CATALOGUE

    return render(default_adapters(), CATALOGUE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.capabilities", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="write the page (docs/clients.md)")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE is not what the declarations make")
    args = parser.parse_args(argv)
    text = current()
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
        print(f"wrote {args.write}")
    elif args.check:
        from conformance.capabilities.check import disagreements
        from conformance.runner import default_adapters
        from conformance.scenarios import CATALOGUE

        wrong = [line for adapter in default_adapters() for line in disagreements(adapter, CATALOGUE)]
        for line in wrong:
            print(line, file=sys.stderr)
        path = Path(args.check)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{args.check} is stale: python -m conformance.capabilities --write {args.check}", file=sys.stderr)
            return 1
        return 1 if wrong else 0
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
