"""``python -m broker_emu``: the same as the ``broker-emu`` command."""

from broker_emu.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
