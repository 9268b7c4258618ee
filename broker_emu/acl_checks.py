"""The authorizer's answer for the principal of one request: ``authorized`` (one operation on one
resource, a refusal traced) and ``any_topic_allows``. Handlers that filter what they show
(Metadata) ask it themselves; the pipeline asks it per API before a handler runs
(``acl_enforcement``)."""

from __future__ import annotations

from broker_emu.context import RequestContext
from broker_emu.security import acls as A
from broker_emu.trace import Kind


def authorized(ctx: RequestContext, operation: int, resource_type: int, name: str, traced: bool = True) -> bool:
    """The authorizer's answer; a refusal is traced (``authorization``), as Kafka's authorizer
    logger records each denied operation (``traced=False``: its logIfDenied=false, a check that
    only filters, like Metadata listing every topic)."""
    authorizer = ctx.cluster.security.authorizer
    if authorizer is None or authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name):
        return True
    if not traced:
        return False
    ctx.cluster.trace.emit(Kind.AUTHORIZATION, **ctx.trace_fields(), details={
        "principal": ctx.principal, "host": ctx.client_host, "operation": A.OPERATIONS[operation],
        "resource_type": A.RESOURCE_TYPES[resource_type], "resource": name})
    return False


def any_topic_allows(ctx: RequestContext, operation: int) -> bool:
    """AuthHelper.authorizeByResourceType: some ALLOW for this principal on some topic and no
    DENY on every topic (a LITERAL '*')."""
    authorizer = ctx.cluster.security.authorizer
    if authorizer is None or ctx.principal in authorizer.super_users:
        return True
    mine = [a for a in authorizer.acls if a.resource_type == A.TOPIC and a.principal in (ctx.principal, A.WILDCARD_PRINCIPAL)
            and a.host in (ctx.client_host, A.WILDCARD) and a.operation in (operation, A.ALL)]
    if any(a.permission == A.DENY and a.pattern_type == A.LITERAL and a.resource_name == A.WILDCARD for a in mine):
        return False
    return any(a.permission == A.ALLOW for a in mine)


