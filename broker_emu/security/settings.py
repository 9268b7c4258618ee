"""A cluster's listener security settings (``Security``): the security protocol of each listener,
the SASL mechanisms and credentials, TLS material, the authorizer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from broker_emu.security.acls import Authorizer
from broker_emu.security.mechanisms import PlainServer, ScramServer
from broker_emu.security.oauthbearer import OAuthBearerServer, UnsecuredValidator
from broker_emu.security.scram import MECHANISMS as SCRAM_MECHANISMS
from broker_emu.security.scram import ScramStore, credential_from_password
from broker_emu.security.tls import ListenerTls

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
MechanismServer = Union[PlainServer, ScramServer, OAuthBearerServer]


class SecurityError(ValueError):
    pass


def parse_users(spec: str) -> dict[str, str]:
    """``emu.sasl.users``: ``name:password,name:password``."""
    users: dict[str, str] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, sep, password = item.partition(":")
        if not sep or not name or not password:
            raise SecurityError(f"emu.sasl.users: expected name:password, got {item!r}")
        users[name] = password
    return users


def sasl_on(protocol: str) -> bool:
    return protocol.startswith("SASL_")


def tls_on(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def parse_extra_listeners(spec: str, primary: str) -> dict[str, int]:
    """``emu.extra.listeners``: ``PROTOCOL[:PORT],...`` -> protocol: first port (0: free ports).
    One listener per protocol, as Kafka's default listener names are the protocols."""
    out: dict[str, int] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        protocol, _, port = item.partition(":")
        protocol = protocol.strip().upper()
        if protocol not in PROTOCOLS or (port and not port.strip().isdigit()):
            raise SecurityError(f"emu.extra.listeners: expected PROTOCOL[:PORT] with PROTOCOL one of "
                                f"{', '.join(PROTOCOLS)}, got {item!r}")
        if protocol == primary or protocol in out:
            raise SecurityError(f"emu.extra.listeners: a second {protocol} listener (one listener per security protocol)")
        out[protocol] = int(port) if port else 0
    return out


class Security:
    """What a cluster's listeners require, and the credentials SASL checks."""

    def __init__(self, config: Mapping[str, Any], host: str = "127.0.0.1",
                 wall_ms: Callable[[], int] | None = None):
        self.wall_ms = wall_ms or (lambda: 0)   # the cluster's wall clock (OAUTHBEARER's exp and iat)
        self.protocol = config["emu.security.protocol"]
        self.extra_listeners = parse_extra_listeners(config["emu.extra.listeners"], self.protocol)
        self.protocols = [self.protocol, *self.extra_listeners]
        self.mechanisms = [m.strip() for m in config["sasl.enabled.mechanisms"].split(",") if m.strip()]
        unknown = [m for m in self.mechanisms if m not in SUPPORTED_MECHANISMS]
        if unknown:
            raise SecurityError(f"sasl.enabled.mechanisms: {', '.join(unknown)} not supported "
                                f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
        if self.uses_sasl and not self.mechanisms:
            raise SecurityError("No SASL mechanisms are enabled")   # SaslServerAuthenticator's words
        self.reauth_ms: int = config["connections.max.reauth.ms"]
        self.passwords = parse_users(config["emu.sasl.users"])
        self.scram = ScramStore()
        # Users given on the command line get SCRAM credentials too, as `kafka-storage format
        # --add-scram` or kafka-configs would create them.
        for user, password in self.passwords.items():
            for mechanism in SCRAM_MECHANISMS:
                self.scram.put(user, mechanism, credential_from_password(mechanism, password))
        skew = config["emu.oauthbearer.allowable.clock.skew.ms"]
        self.oauthbearer = UnsecuredValidator(
            principal_claim=config["emu.oauthbearer.principal.claim.name"].strip() or "sub",
            scope_claim=config["emu.oauthbearer.scope.claim.name"].strip() or "scope",
            required_scope=tuple(config["emu.oauthbearer.required.scope"].split()), clock_skew_ms=skew)
        if config["ssl.client.auth"] != "none" and not self.uses_tls:
            raise SecurityError(f"ssl.client.auth={config['ssl.client.auth']} needs an SSL or SASL_SSL listener")
        client_certs = tuple(n.strip() for n in config["emu.tls.client.certs"].split(",") if n.strip())
        self.tls = ListenerTls(host, config["emu.tls.dir"], config["ssl.client.auth"], client_certs) if self.uses_tls else None
        self.authorizer = Authorizer((u.strip() for u in config["super.users"].split(";") if u.strip()),
                                     config["allow.everyone.if.no.acl.found"]) if config["authorizer.class.name"] else None

    @property
    def uses_sasl(self) -> bool:
        """Some listener runs SASL."""
        return any(sasl_on(p) for p in self.protocols)

    @property
    def uses_tls(self) -> bool:
        """Some listener runs TLS."""
        return any(tls_on(p) for p in self.protocols)

    def mechanism_server(self, mechanism: str) -> MechanismServer:
        if mechanism == "PLAIN":
            return PlainServer(self.passwords)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(self.oauthbearer, self.wall_ms)
        return ScramServer(mechanism, self.scram.get)

    def close(self) -> None:
        """Remove what the listeners wrote (a temporary CA folder)."""
        if self.tls is not None:
            self.tls.close()
