"""Every API the emulator serves: importing a handler module registers its handlers
(``registry.handles``), and registering is what advertises an API in ApiVersions."""

from __future__ import annotations


def register_all() -> None:
    """Register every handler (idempotent: a module registers once, when first imported)."""
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
        groups_kip848,
        metadata,
        offsets,
        produce,
        sasl,
        share_fetch,
        share_groups,
        share_offsets,
        transaction_listings,
    )
    from broker_emu.handlers import groups as group_handlers  # noqa: F401
    from broker_emu.handlers import groups_admin as group_admin  # noqa: F401
    from broker_emu.handlers import transactions as txn_handlers  # noqa: F401
