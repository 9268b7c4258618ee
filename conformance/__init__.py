"""Timeout conformance scenarios, client adapters, runner and reports (see DESIGN.md §6)."""
