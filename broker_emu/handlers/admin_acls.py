"""DescribeAcls, CreateAcls, DeleteAcls (AclApis / ControllerApis; AclControlManager validates).
Without an authorizer Kafka answers SECURITY_DISABLED; the cluster check (ALTER, DESCRIBE on the
cluster) is the pipeline's (acl_enforcement.py).

What Kafka 4.4 answered on the wire (docs/findings.md): an UNKNOWN (0) element anywhere makes the
request unparseable and the connection closes (``*AclsRequest.validate``); an ANY or MATCH where
a binding needs a concrete value fails the whole CreateAcls with UNKNOWN_SERVER_ERROR and no
message (AccessControlEntry / ResourcePattern throw IllegalArgumentException); a success carries
the error message "" in CreateAcls and DescribeAcls, null in DeleteAcls."""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.handlers import CloseConnection
from broker_emu.registry import handles
from broker_emu.security.acls import (
    ANY,
    MATCH,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    Acl,
    AclFilter,
    InvalidAcl,
)
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

NO_AUTHORIZER = "No Authorizer is configured."


@handles(ApiKey.DESCRIBE_ACLS, 1, 3)
async def describe_acls(ctx: RequestContext, req: Message) -> dict[str, Any]:
    authorizer = ctx.cluster.security.authorizer
    if authorizer is None:
        return {"error_code": E.SECURITY_DISABLED, "error_message": "No Authorizer is configured on the broker",
                "resources": []}
    _refuse_unknown(req, "DescribeAclsRequest")
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in authorizer.matching(AclFilter.from_wire(req)):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation, "permission_type": acl.permission})
    return {"error_code": E.NONE, "error_message": "", "resources": [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": entries} for (t, n, p), entries in grouped.items()]}


@handles(ApiKey.CREATE_ACLS, 1, 3)
async def create_acls(ctx: RequestContext, req: Message) -> dict[str, Any]:
    authorizer = ctx.cluster.security.authorizer
    for c in req.creations:
        _refuse_unknown(c, "CreateAclsRequest", "resource_pattern_type")
    if authorizer is not None and any(c.resource_type == ANY or c.resource_pattern_type in (ANY, MATCH)
                                      or c.operation == ANY or c.permission_type == ANY for c in req.creations):
        return {"results": [{"error_code": E.UNKNOWN_SERVER_ERROR, "error_message": None} for _ in req.creations]}
    results = []
    for c in req.creations:
        if authorizer is None:
            results.append({"error_code": E.SECURITY_DISABLED, "error_message": NO_AUTHORIZER})
            continue
        acl = Acl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
                  c.permission_type)
        try:
            authorizer.create(acl)
        except InvalidAcl as exc:
            results.append({"error_code": E.INVALID_REQUEST, "error_message": str(exc)})
            continue
        ctx.cluster.trace.emit(Kind.ACL_CHANGE, **ctx.trace_fields(), details={"created": acl.to_wire()})
        results.append({"error_code": E.NONE, "error_message": ""})
    return {"results": results}


@handles(ApiKey.DELETE_ACLS, 1, 3)
async def delete_acls(ctx: RequestContext, req: Message) -> dict[str, Any]:
    authorizer = ctx.cluster.security.authorizer
    for f in req.filters:
        _refuse_unknown(f, "DeleteAclsRequest")
    out = []
    for f in req.filters:
        if authorizer is None:
            out.append({"error_code": E.SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []})
            continue
        gone = authorizer.delete(AclFilter.from_wire(f))
        for acl in gone:
            ctx.cluster.trace.emit(Kind.ACL_CHANGE, **ctx.trace_fields(), details={"deleted": acl.to_wire()})
        out.append({"error_code": E.NONE, "error_message": None, "matching_acls": [
            {"error_code": E.NONE, "error_message": None, **acl.to_wire()} for acl in gone]})
    return {"filter_results": out}


def _refuse_unknown(item: Message, request: str, pattern_field: str = "pattern_type_filter") -> None:
    """``*AclsRequest.validate``: an UNKNOWN element (or a code no enum has) is unparseable."""
    if "resource_type_filter" in item:
        codes = (item.resource_type_filter, item[pattern_field], item.operation, item.permission_type)
    else:
        codes = (item.resource_type, item[pattern_field], item.operation, item.permission_type)
    tables = (RESOURCE_TYPES, PATTERN_TYPES, OPERATIONS, PERMISSIONS)
    if any(code == 0 or code not in table for code, table in zip(codes, tables)):
        raise CloseConnection(f"{request} contains UNKNOWN elements")
