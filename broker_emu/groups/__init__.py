"""The group coordinator (classic protocol): ``GroupCoordinator(cluster)`` holds every group,
``handlers`` registers the group APIs. See coordinator.py for the theory of operation."""

from broker_emu.groups.coordinator import GroupCoordinator, JoinRequest
from broker_emu.groups.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
)

__all__ = ["COMPLETING_REBALANCE", "DEAD", "EMPTY", "PREPARING_REBALANCE", "STABLE", "GroupCoordinator", "JoinRequest"]
