"""Timeout conformance scenarios, client adapters, runner and reports."""
