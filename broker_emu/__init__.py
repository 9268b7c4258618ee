"""The emulated Kafka cluster (server side)."""
