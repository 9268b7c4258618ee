"""Tests against real third-party Kafka clients over loopback TCP (see docs/real-clients.md)."""
