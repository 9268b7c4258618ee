"""Client quotas: what AlterClientQuotas stores and what Produce and Fetch are throttled by (Kafka's
``ClientQuotaManager`` with ``DefaultQuotaCallback``, ``Rate`` over ``SampledStat`` windows,
``QuotaUtils.throttleTime``; ``ClientQuotaControlManager`` for the admin side).

Theory of operation. Quotas belong to entities: a user, a client id, or a user with a client id,
each name possibly "default" (None). A connection here is unauthenticated, so its user is
ANONYMOUS; the quota in force for (user, client id) is the first set, in Kafka's precedence:
user+client, user+default client, user, default user+client, default user+default client, default
user, client, default client. Every Produce records its request size against producer_byte_rate,
every Fetch its response size against consumer_byte_rate, on the client id's rate: the total over
``quota.window.num`` windows of ``quota.window.size.seconds`` divided by the time they span (at
least the full windows but one, as ``Rate.windowSize``). Above the quota, the throttle is
(rate - quota) / quota x that span: the answer carries it as throttle_time_ms and the broker then
mutes the connection for as long (KIP-219), as the ``throttle`` fault already does.

Pure: no clock, no I/O; the server passes ``now`` (seconds, trio's clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ANONYMOUS = "ANONYMOUS"
# QuotaConfig.userAndClientQuotaConfigs / ipConfigs: key -> its ConfigDef type
KEYS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG", "request_percentage": "DOUBLE",
        "controller_mutation_rate": "DOUBLE"}
IP_KEYS = {"connection_creation_rate": "INT"}
Entity = tuple[tuple[str, str | None], ...]   # sorted (entity type, name or None for "default")


class QuotaError(ValueError):
    """A quota change Kafka refuses: INVALID_REQUEST with this message."""


@dataclass
class _Samples:
    """SampledStat's windows: (start seconds, total) pairs, the newest last."""
    windows: list[list[float]] = field(default_factory=list)


class Quotas:
    def __init__(self, window_num: int = 11, window_s: float = 1.0):
        self.window_num, self.window_s = window_num, window_s
        self.values: dict[Entity, dict[str, float]] = {}
        self._rates: dict[tuple[str, str], _Samples] = {}

    # -- the admin side ---------------------------------------------------------------------------
    def alter(self, parts: list[tuple[str, str | None]], ops: list[tuple[str, float | None, bool]],
              validate_only: bool = False) -> None:
        """parts: the entity's (type, name or None) as sent; ops: (key, value, remove). Raises
        QuotaError with ClientQuotaControlManager's messages."""
        named = dict(parts)   # the request becomes a map: a repeated entity type, the last one wins (Kafka 4.4)
        _check_entity(list(named.items()))
        entity: Entity = tuple(sorted(named.items()))
        keys = [k for k, _, _ in ops]
        if len(set(keys)) != len(keys):   # Kafka's "Duplicate quota key" result is overwritten by this one
            raise QuotaError(f"Ignoring duplicate entity {_java(entity)}")
        allowed = IP_KEYS if any(t == IP for t, _ in entity) else KEYS
        current = dict(self.values.get(entity, {}))
        for key, value, remove in ops:
            if key not in allowed:
                raise QuotaError(f"Invalid configuration key {key}")
            if remove:
                current.pop(key, None)
                continue
            value = float(value or 0.0)
            if value <= 0.0:
                raise QuotaError(f"Quota {key} must be greater than 0")
            if allowed[key] != "DOUBLE" and abs(value % 1.0) > 1e-6:
                raise QuotaError(f"{key} cannot be a fractional value.")
            current[key] = value
        if validate_only:
            return
        if current:
            self.values[entity] = current
        else:
            self.values.pop(entity, None)

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """components: (entity type, match type 0 exact / 1 default / 2 any, name)."""
        out = []
        for entity, values in sorted(self.values.items(), key=lambda kv: repr(kv[0])):
            named = dict(entity)
            if strict and set(named) != {t for t, _, _ in components}:
                continue
            if all(t in named and (m == 2 or (m == 1 and named[t] is None) or (m == 0 and named[t] == n))
                   for t, m, n in components):
                out.append((entity, dict(values)))
        return out

    def quota(self, client_id: str, key: str, user: str = ANONYMOUS) -> float | None:
        """DefaultQuotaCallback's precedence for (user, client id)."""
        for entity in ((("client-id", client_id), ("user", user)), (("client-id", None), ("user", user)),
                       (("user", user),), (("client-id", client_id), ("user", None)),
                       (("client-id", None), ("user", None)), (("user", None),),
                       (("client-id", client_id),), (("client-id", None),)):
            value = self.values.get(entity, {}).get(key)
            if value is not None:
                return value
        return None

    # -- enforcement ------------------------------------------------------------------------------
    def record(self, client_id: str, key: str, amount: float, now: float) -> float:
        """Record ``amount`` bytes; the throttle in ms (0 when within the quota or none is set)."""
        bound = self.quota(client_id, key)
        if bound is None:
            return 0.0
        samples = self._rates.setdefault((client_id, key), _Samples()).windows
        if not samples or now - samples[-1][0] >= self.window_s:
            samples.append([now, 0.0])
        samples[-1][1] += amount
        cutoff = now - self.window_num * self.window_s        # purgeObsoleteSamples
        while samples and samples[0][0] <= cutoff:
            samples.pop(0)
        span = self._window_span(samples, now)
        rate = sum(total for _, total in samples) / span
        if rate <= bound:
            return 0.0
        return round((rate - bound) / bound * span * 1000)

    def _window_span(self, samples: list[list[float]], now: float) -> float:
        """Rate.windowSize: from the oldest window's start, but at least the full windows but one."""
        elapsed = now - samples[0][0]
        full = int(elapsed / self.window_s)
        if full < self.window_num - 1:
            elapsed += (self.window_num - 1 - full) * self.window_s
        return elapsed


def _java(entity: Entity) -> str:
    """ClientQuotaEntity.toString."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def _check_entity(entity: list[tuple[str, str | None]]) -> None:
    """ClientQuotaControlManager.validateEntity and configKeysForEntityType."""
    if not entity:
        raise QuotaError("Invalid empty client quota entity")
    seen: set[str] = set()
    for kind, name in entity:
        seen.add(kind)
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise QuotaError(f"Empty {kind} not supported")
    if IP in seen and len(seen) > 1:   # Kafka's message, its missing space included
        raise QuotaError("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
