"""ACLs and the authorizer, as Kafka's StandardAuthorizer decides (StandardAuthorizerData):
super users may do anything; otherwise any matching DENY wins, then any matching ALLOW, and with
no ACL on the resource at all the answer is ``allow.everyone.if.no.acl.found`` (default: deny).

An ACL matches a resource by name (LITERAL), by prefix (PREFIXED) or as the LITERAL wildcard
``*``; a principal by equality or ``User:*``; a host by equality or ``*``; an operation by
equality or ALL, and an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, an ALLOW of
ALTER_CONFIGS also DESCRIBE_CONFIGS (IMPLIES_DESCRIBE, IMPLIES_DESCRIBE_CONFIGS)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# org.apache.kafka.common.resource.ResourceType, PatternType; acl.AclOperation, AclPermissionType
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
              8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
              13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
DENY, ALLOW = 2, 3
WILDCARD, WILDCARD_PRINCIPAL, CLUSTER_NAME = "*", "User:*", "kafka-cluster"
IMPLIES_DESCRIBE = frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})


class InvalidAcl(ValueError):
    pass


@dataclass(frozen=True)
class Acl:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def to_wire(self) -> dict[str, Any]:
        return {"resource_type": self.resource_type, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type, "principal": self.principal, "host": self.host,
                "operation": self.operation, "permission_type": self.permission}


def validate_new(acl: Acl) -> None:
    """AclControlManager.validateNewAcl and AclApis.handleCreateAcls: their messages."""
    if acl.resource_type in (0, 1) or acl.resource_type not in RESOURCE_TYPES:
        raise InvalidAcl(f"Invalid resourceType {RESOURCE_TYPES.get(acl.resource_type, 'UNKNOWN')}")
    if acl.pattern_type not in (LITERAL, PREFIXED):
        raise InvalidAcl(f"Invalid patternType {PATTERN_TYPES.get(acl.pattern_type, 'UNKNOWN')}")
    if acl.operation in (0, 1) or acl.operation not in OPERATIONS:
        raise InvalidAcl(f"Invalid operation {OPERATIONS.get(acl.operation, 'UNKNOWN')}")
    if acl.permission not in (DENY, ALLOW):
        raise InvalidAcl(f"Invalid permissionType {PERMISSIONS.get(acl.permission, 'UNKNOWN')}")
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.resource_name:
        raise InvalidAcl("Invalid empty resource name")


@dataclass(frozen=True)
class AclFilter:
    """AclBindingFilter: None or ANY matches everything in that field; MATCH on a name also
    finds the wildcard and the prefixes that cover it."""
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    @classmethod
    def from_wire(cls, f: Any) -> AclFilter:
        return cls(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                   f.host_filter, f.operation, f.permission_type)

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and (self.operation == ANY or self.operation == acl.operation)
                and (self.permission == ANY or self.permission == acl.permission))

    def _pattern_matches(self, acl: Acl) -> bool:
        if self.pattern_type == MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type == LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name


def _operation_allows(acl_op: int, permission: int, wanted: int) -> bool:
    if acl_op in (ALL, wanted):
        return True
    if permission != ALLOW:
        return False
    return (wanted == DESCRIBE and acl_op in IMPLIES_DESCRIBE) or \
        (wanted == DESCRIBE_CONFIGS and acl_op in IMPLIES_DESCRIBE_CONFIGS)


def _resource_matches(acl: Acl, resource_type: int, name: str) -> bool:
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return name.startswith(acl.resource_name)


class Authorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.acls: list[Acl] = []     # in creation order, as DescribeAcls lists them

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        on_resource = [a for a in self.acls if _resource_matches(a, resource_type, name)]
        if not on_resource:
            return self.allow_if_no_acl
        allowed = False
        for acl in on_resource:
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD):
                continue
            if not _operation_allows(acl.operation, acl.permission, operation):
                continue
            if acl.permission == DENY:
                return False
            allowed = True
        return allowed

    def allowed_operations(self, principal: str, host: str, resource_type: int, name: str,
                           supported: Iterable[int]) -> list[int]:
        """KIP-430's authorized operations: those of ``supported`` this principal may do."""
        return [op for op in supported if self.authorize(principal, host, op, resource_type, name)]

    def create(self, acl: Acl) -> None:
        validate_new(acl)
        if acl not in self.acls:     # an ACL that exists already is not an error
            self.acls.append(acl)

    def matching(self, f: AclFilter) -> list[Acl]:
        return [a for a in self.acls if f.matches(a)]

    def delete(self, f: AclFilter) -> list[Acl]:
        gone = self.matching(f)
        self.acls = [a for a in self.acls if a not in gone]
        return gone
