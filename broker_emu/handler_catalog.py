"""Every API the emulator serves: importing a handler module registers its handlers
(``registry.handles``), and registering is what advertises an API in ApiVersions."""

from __future__ import annotations


def register_all() -> None:
    """Register every handler (idempotent: a module registers once, when first imported)."""
    from broker_emu.groups import admin_handlers as group_admin  # noqa: F401
    from broker_emu.groups import handlers as group_handlers  # noqa: F401
    from broker_emu.groups import kip848_handlers  # noqa: F401
    from broker_emu.handlers import (  # noqa: F401
        admin,
        admin_acls,
        admin_configs,
        admin_elect,
        admin_log_dirs,
        admin_partitions,
        admin_quotas,
        admin_reassign,
        admin_records,
        admin_scram,
        api_versions,
        fetch,
        metadata,
        offsets,
        produce,
        sasl,
    )
    from broker_emu.transactions import handlers as txn_handlers  # noqa: F401
    from broker_emu.transactions import listings  # noqa: F401
