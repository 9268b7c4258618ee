"""Client adapters for the conformance suite (see ``base.Adapter``)."""

from conformance.adapters.base import ALL_OPERATIONS, Adapter, RunEnv

__all__ = ["ALL_OPERATIONS", "Adapter", "RunEnv"]
