"""Campaigns: the conformance matrix at scale on Spark (issue 8, DESIGN.md §6)."""
