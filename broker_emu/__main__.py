"""``python -m broker_emu``: the emulator's own commands (serve, fault). The whole ``broker-emu``
command (conformance, explain, campaign, chaos too) is ``conformance.main``."""

from broker_emu.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
