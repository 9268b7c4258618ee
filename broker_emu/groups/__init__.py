"""The group coordinator: ``GroupCoordinator(cluster)`` holds every group (classic and KIP-848),
``handlers`` registers the group APIs. coordinator.py says which collaborator does what."""

from broker_emu.groups.coordinator import GroupCoordinator, JoinRequest
from broker_emu.groups.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
)

__all__ = ["COMPLETING_REBALANCE", "DEAD", "EMPTY", "PREPARING_REBALANCE", "STABLE", "GroupCoordinator", "JoinRequest"]
