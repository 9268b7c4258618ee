"""Campaigns: the conformance matrix at scale on Spark."""
