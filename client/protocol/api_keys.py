"""Kafka API keys served by broker-emu's codec."""

import enum


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    SASL_AUTHENTICATE = 36
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    GET_TELEMETRY_SUBSCRIPTIONS = 71

    @property
    def api_name(self) -> str:
        """Kafka's CamelCase name, e.g. ``ListOffsets``."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_name(cls, name: str) -> "ApiKey":
        """Accepts ``ListOffsets``, ``list_offsets`` or ``LIST_OFFSETS``."""
        wanted = name.replace("_", "").lower()
        for key in cls:
            if key.name.replace("_", "").lower() == wanted:
                return key
        raise ValueError(f"unknown Kafka API name {name!r}")
