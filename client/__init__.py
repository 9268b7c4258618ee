"""broker-emu's Kafka protocol client. ``client.protocol`` is the wire codec both sides share."""
