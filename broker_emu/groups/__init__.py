"""The group coordinator (classic protocol)."""

from broker_emu.groups.coordinator import GroupCoordinator, GroupError

__all__ = ["GroupCoordinator", "GroupError"]
