"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka 4.x's
ScramImage.describe and ScramControlManager.alterCredentials answer them. An upsertion carries
the salted password, never the password; the stored and server keys are derived from it here
as ScramFormatter does, and the next SCRAM login checks against them. The cluster checks
(DESCRIBE, ALTER) are the pipeline's (acl_enforcement.py)."""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from broker_emu.security.scram import MAX_ITERATIONS, MECHANISM_CODES, MECHANISM_NAMES, MIN_ITERATIONS, credential_from_salted
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

TWICE = "A user credential cannot be altered twice in the same request"


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
async def describe_user_scram_credentials(ctx: RequestContext, req: Message) -> dict[str, Any]:
    store = ctx.cluster.security.scram
    names = [u.name for u in req.users or []]
    wanted = list(dict.fromkeys(names)) if names else list(store.users)
    results: list[dict[str, Any]] = []
    for user in wanted:
        if names.count(user) > 1:
            results.append({"user": user, "error_code": E.DUPLICATE_RESOURCE, "credential_infos": [],
                            "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}"})
        elif user not in store.users:
            results.append({"user": user, "error_code": E.RESOURCE_NOT_FOUND, "credential_infos": [],
                            "error_message": f"Attempt to describe a user credential that does not exist: {user}"})
        else:
            results.append({"user": user, "error_code": E.NONE, "error_message": None, "credential_infos": [
                {"mechanism": MECHANISM_CODES[m], "iterations": c.iterations} for m, c in sorted(store.users[user].items())]})
    return {"error_code": E.NONE, "error_message": None, "results": results}


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
async def alter_user_scram_credentials(ctx: RequestContext, req: Message) -> dict[str, Any]:
    store = ctx.cluster.security.scram
    errors: dict[str, tuple[int, str]] = {}
    deletions: dict[str, Any] = {}
    upserts: dict[str, Any] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (E.DUPLICATE_RESOURCE, TWICE)
        elif (problem := _check_name(d.name, d.mechanism)) is not None:
            errors[d.name] = problem
        elif store.get(d.name, MECHANISM_NAMES[d.mechanism]) is None:
            errors[d.name] = (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletions[d.name] = d
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (E.DUPLICATE_RESOURCE, TWICE)
        elif (problem := _check_name(u.name, u.mechanism)) is not None:
            errors[u.name] = problem
        elif u.iterations < MIN_ITERATIONS:
            errors[u.name] = (E.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (E.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upserts[u.name] = u
    results = []
    for name, d in deletions.items():
        store.delete(name, MECHANISM_NAMES[d.mechanism])
        results.append({"user": name, "error_code": E.NONE, "error_message": None})
    for name, u in upserts.items():
        mechanism = MECHANISM_NAMES[u.mechanism]
        store.put(name, mechanism, credential_from_salted(mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations))
        results.append({"user": name, "error_code": E.NONE, "error_message": None})
    for name, (code, message) in errors.items():
        results.append({"user": name, "error_code": code, "error_message": message})
    changed = sorted(set(deletions) | set(upserts))
    if changed:
        ctx.cluster.trace.emit(Kind.CONFIG_CHANGE, **ctx.trace_fields(), details={
            "resource": "scram", "deleted": sorted(deletions), "upserted": sorted(upserts)})
    return {"results": results}


def _check_name(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return (E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if mechanism not in MECHANISM_NAMES:
        return (E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return None
