"""Authorized operations (KIP-430) as a broker without an authorizer reports them.

A client asks for them with Metadata's include_topic_authorized_operations (v8+) and
include_cluster_authorized_operations (v8-10), DescribeGroups' include_authorized_operations
(v3+) and DescribeCluster's include_cluster_authorized_operations. Kafka answers with
``AuthHelper.authorizedOperations``: with no authorizer configured every operation the resource
type supports (``AclEntry.supportedOperations``) is allowed, and the set goes out as a bit field,
bit n for the AclOperation whose code is n (``Utils.to32BitField``). When the client did not
ask, the field keeps its schema default, Integer.MIN_VALUE.

Under an authorizer (docs/security.md) the set is what the principal may do of those
(``authorized_for``).
"""

from __future__ import annotations

from collections.abc import Iterable

# org.apache.kafka.common.acl.AclOperation codes
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

NOT_REQUESTED = -(1 << 31)  # Integer.MIN_VALUE, the schemas' default


def bit_field(operations: Iterable[int]) -> int:
    """``Utils.to32BitField``: one bit per operation code."""
    value = 0
    for op in operations:
        value |= 1 << op
    return value


# AclEntry.supportedOperations(ResourceType) in Kafka 4.0 (GROUP gained DESCRIBE_CONFIGS and
# ALTER_CONFIGS with group configs, KAFKA-14510; a 3.x broker reports READ | DELETE | DESCRIBE).
TOPIC_OPERATIONS = bit_field((READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS))
GROUP_OPERATIONS = bit_field((READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS))
CLUSTER_OPERATIONS = bit_field((CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER,
                                DESCRIBE))


def authorized(operations: int, asked: bool) -> int:
    """What goes in an ``*_authorized_operations`` field without an authorizer: every supported
    operation if asked."""
    return operations if asked else NOT_REQUESTED


def authorized_for(ctx, operations: int, asked: bool, resource_type: int, name: str) -> int:
    """AuthHelper.authorizedOperations: of the supported ``operations``, those the connection's
    principal may do on the resource (all of them without an authorizer), if asked."""
    authorizer = ctx.cluster.security.authorizer
    if not asked or authorizer is None:
        return authorized(operations, asked)
    return bit_field(authorizer.allowed_operations(ctx.principal, ctx.client_host, resource_type, name,
                                                   (o for o in range(32) if operations >> o & 1)))
