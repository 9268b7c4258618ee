"""The network client: one connection per broker, KIP-19 request timeouts, reconnect backoff.

- Connections open on demand through the injected ``connect`` callable, each attempt bounded by
  socket.connection.setup.timeout.ms, which grows ×2 (±20 %) per failed attempt up to
  socket.connection.setup.timeout.max.ms (KIP-601) and resets once connected.
- After a connection fails or closes, the next attempt to that broker waits the reconnect
  backoff: reconnect.backoff.ms ×2 per consecutive failure (±20 % jitter) up to
  reconnect.backoff.max.ms; a connection that completes its ApiVersions resets it (Java's
  ClusterConnectionStates rules). The random source is injected (seeded by default).
- ApiVersions goes first on every connection, at the highest version we know; UNSUPPORTED_VERSION
  makes us retry once on the same connection with the broker's advertised max for key 18 (v0 if
  it lists none); any other failure closes the connection. Each later request uses the highest
  version both sides support.
- Each request carries its own timeout: request.timeout.ms, or for JoinGroup max(request.timeout.ms,
  rebalance_timeout_ms + 5000) because the broker legitimately holds it that long (Java's
  AbstractCoordinator), or whatever the caller passes (the consumer's min(time left,
  request.timeout.ms)). On expiry the connection closes, every request in flight on it fails
  with a retriable RequestTimeoutException, and the disconnect listeners (metadata) are told.
- Rebootstrap (KIP-899, KIP-1102; client/rebootstrap.py decides when): the client closes its
  connections to the brokers it knows, forgets them and asks the bootstrap addresses again.
  Producer, consumer and admin share this, through ``metadata_attempt``/``metadata_answered``
  around each Metadata request. With metadata.recovery.strategy=none the bootstrap addresses are
  never asked again once an answer named the brokers (Java's Metadata replaces them).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import trio

from client.backoff import ExponentialBackoff
from client.errors import ErrorCode, KafkaError, RetriableError, UnsupportedVersionError, error_for_code
from client.exceptions import ConnectionFailedError, ConnectionSetupTimeoutException, UnknownBrokerError
from client.protocol import ApiKey
from client.protocol.codec import supported_versions
from client.rebootstrap import RebootstrapClock
from client.transport import (
    STREAM_ERRORS,
    BrokerConnection,
    Connect,
    connect_from_config,
    tcp_connect,
)

__all__ = ["JOIN_GROUP_TIMEOUT_LAPSE_MS", "Connect", "NetworkClient", "tcp_connect"]

JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000   # Java's AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE
SOFTWARE = {"client_software_name": "broker-emu", "client_software_version": "0.1.0"}


class NodeState:
    """Per-broker connection bookkeeping (Java's NodeConnectionState, minus the socket)."""

    __slots__ = ("blackout_until", "failed_attempts", "failed_connects")

    def __init__(self) -> None:
        self.failed_attempts = 0       # consecutive disconnects/failures: reconnect backoff exponent
        self.failed_connects = 0       # consecutive failed connection setups: setup timeout exponent
        self.blackout_until = float("-inf")


def parse_bootstrap(servers: str) -> dict[int, tuple[str, int]]:
    """Bootstrap addresses get node ids -1, -2, ... until metadata names the brokers."""
    nodes = {}
    for i, hostport in enumerate(a.strip() for a in str(servers).split(",") if a.strip()):
        host, _, port = hostport.rpartition(":")
        nodes[-1 - i] = (host.strip("[]"), int(port))
    return nodes


class NetworkClient:
    def __init__(self, config: dict, nursery: trio.Nursery, connect: Connect | None = None,
                 rng: random.Random | None = None, on_disconnect: Callable[[int], None] | None = None):
        self.config = config
        self.nursery = nursery
        self.connect_fn = connect or connect_from_config(config)
        self.rng = rng or random.Random(0)
        self.bootstrap = parse_bootstrap(config["bootstrap.servers"])
        self.nodes: dict[int, tuple[str, int]] = dict(self.bootstrap)
        # a second node id for a broker, so one role gets a connection of its own (the group
        # coordinator: Java's consumer uses node Integer.MAX_VALUE - id for it)
        self.aliases: dict[int, int] = {}
        self.connections: dict[int, BrokerConnection] = {}
        self.states: dict[int, NodeState] = {}
        self._connecting: dict[int, trio.Event] = {}
        # the generator's words: a tuple of ints hashes the same in every process (the whole state holds a
        # None, whose hash is its address before Python 3.12)
        self._rng_seed = hash(self.rng.getstate()[1])
        self._rngs: dict[int, random.Random] = {}
        self.reconnect_backoff = ExponentialBackoff(config["reconnect.backoff.ms"], config["reconnect.backoff.max.ms"], self.rng)
        self.setup_timeout = ExponentialBackoff(config["socket.connection.setup.timeout.ms"],
                                                config["socket.connection.setup.timeout.max.ms"], self.rng)
        self.disconnect_listeners: list[Callable[[int], None]] = [on_disconnect] if on_disconnect else []
        self.recovery = RebootstrapClock(config["metadata.recovery.strategy"], config["metadata.recovery.rebootstrap.trigger.ms"])
        self.rebootstraps: list[tuple[float, str]] = []    # (when, why): every time it went back to bootstrap
        self.rebootstrap_listeners: list[Callable[[], None]] = []
        # the cluster's finalized features (KIP-584) from the ApiVersions answer with the highest
        # epoch seen, as Java's ApiVersions.maybeUpdateFinalizedFeatures keeps them; the
        # transactional producer reads transaction.version here (KIP-890)
        self.finalized_features_epoch = -1
        self.finalized_features: dict[str, int] = {}
        self.closed = False

    # -- node bookkeeping ------------------------------------------------------------------
    def state(self, node: int) -> NodeState:
        return self.states.setdefault(node, NodeState())

    def _node_rng(self, node: int) -> random.Random:
        """The node's own random source for its connection backoffs, derived from the client's
        without drawing from it: a connection to one broker and a disconnect from another at the
        same instant draw the same jitter whichever trio runs first, so virtual-time runs stay
        reproducible."""
        rng = self._rngs.get(node)
        if rng is None:
            rng = self._rngs[node] = random.Random(f"{self._rng_seed}:{node}")
        return rng

    def _disconnected(self, node: int, while_connecting: bool) -> int:
        """Java's ClusterConnectionStates.disconnected: back off before the next attempt."""
        st = self.state(node)
        backoff_ms = self.reconnect_backoff.backoff_ms(st.failed_attempts, self._node_rng(node))
        st.failed_attempts += 1
        st.blackout_until = trio.current_time() + backoff_ms / 1000
        st.failed_connects = st.failed_connects + 1 if while_connecting else 0
        return backoff_ms

    def _connection_closed(self, conn: BrokerConnection, closed_by: str) -> None:
        if self.connections.get(conn.node) is conn:
            del self.connections[conn.node]
        self._disconnected(conn.node, while_connecting=False)
        for listener in list(self.disconnect_listeners):
            listener(conn.node)

    def _connect_failed(self, node: int) -> int:
        backoff_ms = self._disconnected(node, while_connecting=True)
        for listener in list(self.disconnect_listeners):   # maybe the broker is gone: refresh metadata
            listener(node)
        return backoff_ms

    def is_ready(self, node: int) -> bool:
        conn = self.connections.get(node)
        return conn is not None and not conn.closed

    def connection_delay(self, node: int) -> float:
        """Seconds until a connection attempt to ``node`` is allowed (0 if now)."""
        return max(self.state(node).blackout_until - trio.current_time(), 0.0)

    def in_flight(self, node: int) -> int:
        conn = self.connections.get(node)
        return conn.in_flight if conn is not None and not conn.closed else 0

    def broker_nodes(self) -> list[int]:
        return [n for n in self.nodes if n >= 0 and n not in self.aliases]

    def candidates(self, *, metadata: bool = False) -> list[int]:
        """Nodes to ask for cluster-wide things (Metadata, InitProducerId), best first: ready
        connections by load, then known brokers not backing off, then the rest by when their
        backoff ends. For Metadata (``metadata``), once brokers are known only they are asked,
        whatever the strategy (Java's Metadata replaces the bootstrap addresses with them): the
        client goes back to the bootstrap addresses only by rebootstrapping (``metadata_attempt``),
        never beside the brokers it knows, which is what KIP-899 and KIP-1102 judge. Other requests
        may still use a bootstrap connection already open under strategy rebootstrap (one
        connection fewer; whichever of Metadata and InitProducerId a producer sends first at its
        start, the same connections)."""
        known = self.broker_nodes()
        if metadata:
            pool = known or [n for n in self.nodes if n < 0]
        else:   # strategy none: once brokers are known, only they (Java's Metadata forgets the bootstrap)
            pool = known + [n for n in self.nodes if n < 0 and (self.recovery.enabled or not known)]

        def rank(n: int) -> tuple:
            return (not self.is_ready(n), self.connection_delay(n) > 0, self.in_flight(n), n < 0,
                    self.state(n).blackout_until, pool.index(n))

        return sorted(pool, key=rank)

    def least_loaded_node(self, *, metadata: bool = False) -> int:
        """Where a request that may go to any broker goes (Metadata, FindCoordinator,
        GetTelemetrySubscriptions): the best of ``candidates``, never simply the first known —
        a broker that failed is backing off and ranks behind the live ones (Java's
        NetworkClient.leastLoadedNode)."""
        return self.candidates(metadata=metadata)[0]

    # -- rebootstrap (KIP-899, KIP-1102) ----------------------------------------------------------
    def _known(self) -> str:
        return ", ".join(f"{n} ({h}:{p})" for n in self.broker_nodes() for h, p in [self.nodes[n]])

    def _bootstrap(self) -> str:
        return ", ".join(f"{h}:{p}" for h, p in self.bootstrap.values())

    def describe_starving(self) -> str:
        """Since when no Metadata answer helped, and what the client does next ("" if it did)."""
        return self.recovery.describe(trio.current_time(), self._known(), self._bootstrap())

    def none_available(self, unreachable: frozenset[int] = frozenset()) -> bool:
        """Java's ``!LeastLoadedNode.hasNodeAvailableOrConnectionReady``: brokers are known, none has
        a connection and each is backing off (they all refused or dropped us) or could not be
        reached in the caller's round (``unreachable``: a round that tries them one after the other
        outlives the backoff of the first)."""
        known = self.broker_nodes()
        return bool(known) and all(n in unreachable or (not self.is_ready(n) and self.connection_delay(n) > 0)
                                   for n in known)

    def rebootstrap(self, why: str | None = None) -> None:
        """Java's ``NetworkClient.handleRebootstrap`` and ``Metadata.rebootstrap``: disconnect from
        every broker the metadata named, forget them, and go back to the bootstrap addresses
        (their ids and backoff state kept, as Java keeps its bootstrap nodes' ids)."""
        now = trio.current_time()
        why = why or self.recovery.reason(now, self._known(), self._bootstrap())
        for node in self.broker_nodes():
            conn = self.connections.get(node)
            if conn is not None and not conn.closed:
                conn.close(f"the client closed the connection: rebootstrap ({why})", "client")
            del self.nodes[node]
        self.nodes.update(self.bootstrap)
        self.recovery.rebootstrapped(now)
        self.rebootstraps.append((now, why))
        for listener in list(self.rebootstrap_listeners):
            listener()

    def metadata_attempt(self) -> None:
        """Before each Metadata request: rebootstrap if it is due, and count the attempt."""
        now = trio.current_time()
        if self.recovery.needs(now):
            self.rebootstrap()
        else:
            self.rebootstrap_if_none_available()
        self.recovery.attempting(now)

    def rebootstrap_if_none_available(self, unreachable: frozenset[int] = frozenset()) -> bool:
        """Java's ``DefaultMetadataUpdater.maybeUpdate``: under strategy rebootstrap, when no known
        broker is available the client rebootstraps at once, without waiting for the trigger."""
        if not (self.recovery.enabled and self.none_available(unreachable)):
            return False
        self.rebootstrap(f"no broker it knows is available ({self._known()}: each refused or dropped the connection "
                         f"and is backing off): forgetting them, asking bootstrap.servers ({self._bootstrap()}) (KIP-899)")
        return True

    def metadata_answered(self, node: int, md: Any) -> RetriableError | None:
        """A Metadata answer from ``node``: None if it can be used (the attempt is over), else why
        not, as an error the caller may retry on. REBOOTSTRAP_REQUIRED (v13+) rebootstraps at once
        under strategy rebootstrap; an answer naming no broker is ignored either way (Java's
        ``DefaultMetadataUpdater.handleSuccessfulResponse``)."""
        address = "%s:%s" % self.nodes.get(node, ("?", "?"))
        if getattr(md, "error_code", 0) == ErrorCode.REBOOTSTRAP_REQUIRED and self.recovery.enabled:
            self.recovery.server_asked()
            self.rebootstrap()
            return RetriableError(f"broker {node} at {address} answered Metadata with REBOOTSTRAP_REQUIRED: "
                                  f"{self.rebootstraps[-1][1]}")
        if not md.brokers:
            code = getattr(md, "error_code", 0)
            return RetriableError(f"broker {node} at {address} answered Metadata naming no broker"
                                  + (f" (error {code})" if code else "") + ": ignored, as Java's client ignores it")
        self.recovery.succeeded()
        return None

    # -- connecting ------------------------------------------------------------------------
    async def connection(self, node: int) -> BrokerConnection:
        """The node's connection, connecting (and negotiating versions) if needed. Concurrent
        callers share one attempt, and nobody gets a connection before its ApiVersions answer."""
        while True:
            if self.closed:
                raise KafkaError("the network client is closed")
            conn = self.connections.get(node)
            if conn is not None and not conn.closed:
                return conn
            pending = self._connecting.get(node)
            if pending is None:
                break
            await pending.wait()
        done = self._connecting[node] = trio.Event()
        try:
            return await self._connect(node)
        finally:
            del self._connecting[node]
            done.set()

    async def _connect(self, node: int) -> BrokerConnection:
        if node not in self.nodes:   # a rebootstrap forgets the brokers under requests on their way to them
            raise UnknownBrokerError(node, forgotten=bool(self.rebootstraps))
        st = self.state(node)
        if trio.current_time() < st.blackout_until:
            await trio.sleep_until(st.blackout_until)   # reconnect backoff
            if node not in self.nodes:   # a rebootstrap forgot it meanwhile
                raise UnknownBrokerError(node, forgotten=True)
        host, port = self.nodes[node]
        address = f"{host}:{port}"
        setup = self.setup_timeout.backoff(st.failed_connects, self._node_rng(node))
        start = trio.current_time()
        try:
            with trio.fail_after(setup):
                stream = await self.connect_fn(self.aliases.get(node, node), host, port)
        except trio.TooSlowError:
            attempt = st.failed_connects + 1
            self._connect_failed(node)
            raise ConnectionSetupTimeoutException(node, address, (trio.current_time() - start) * 1000, attempt) from None
        except STREAM_ERRORS as exc:
            backoff_ms = self._connect_failed(node)
            raise ConnectionFailedError(node, address, str(exc) or type(exc).__name__, backoff_ms) from None
        except KafkaError:
            # a refused login backs off like any failed attempt (Java's
            # ClusterConnectionStates.authenticationFailed), or every sender retry logs in again at once
            self._connect_failed(node)
            raise
        st.failed_connects = 0                        # connected: setup timeout back to its base
        conn = BrokerConnection(node, address, stream, self.config["client.id"], self._connection_closed, rng=self.rng,
                                reauth_timeout=self.config["request.timeout.ms"] / 1000)
        await self.nursery.start(conn.run)
        try:
            await self._negotiate(conn)
        except BaseException:
            conn.close("the client closed the connection: ApiVersions did not complete", "client")
            raise
        st.failed_attempts = 0                        # ready: reconnect backoff back to its base
        self.connections[node] = conn
        return conn

    async def _negotiate(self, conn: BrokerConnection) -> None:
        key = int(ApiKey.API_VERSIONS)
        version = supported_versions(key)[1]
        timeout = self.config["request.timeout.ms"] / 1000
        answer = await conn.request(key, version, SOFTWARE, timeout)
        if answer.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            theirs = next((k.max_version for k in answer.api_keys if k.api_key == key), 0)
            answer = await conn.request(key, min(theirs, version), SOFTWARE, timeout)
        if answer.error_code:
            conn.close(f"the client closed the connection: ApiVersions failed with error {answer.error_code}")
            raise error_for_code(answer.error_code, f"ApiVersions to broker {conn.node} at {conn.address} failed "
                                                    f"with error {answer.error_code}")
        conn.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        self._note_features(answer)

    def _note_features(self, answer: Any) -> None:
        epoch = answer.get("finalized_features_epoch", -1)
        if epoch is not None and epoch > self.finalized_features_epoch:
            self.finalized_features_epoch = epoch
            self.finalized_features = {f.name: f.max_version_level for f in answer.get("finalized_features") or ()}

    # -- requests --------------------------------------------------------------------------
    def version_for(self, conn: BrokerConnection, api_key: int, max_version: int | None = None) -> int:
        lo, hi = supported_versions(api_key)
        if max_version is not None:
            hi = min(hi, max_version)
        theirs = conn.versions.get(int(api_key))
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            name = ApiKey(api_key).api_name
            raise UnsupportedVersionError(f"broker {conn.node} at {conn.address} does not serve {name} in versions "
                                          f"{lo}..{hi} (it advertises {theirs or 'nothing'})")
        return min(hi, theirs[1])

    def request_timeout_for(self, api_key: int, body: Any) -> tuple[float, str]:
        """(seconds, governing setting) of a request's client-side timeout."""
        base = self.config["request.timeout.ms"]
        if api_key == ApiKey.JOIN_GROUP:
            rebalance = int(body.get("rebalance_timeout_ms", -1) or -1) if hasattr(body, "get") else -1
            if rebalance + JOIN_GROUP_TIMEOUT_LAPSE_MS > base:
                return (rebalance + JOIN_GROUP_TIMEOUT_LAPSE_MS) / 1000, "rebalance_timeout_ms + 5000 (JoinGroup)"
        return base / 1000, "request.timeout.ms"

    async def request(self, node: int, api_key: int, body: Any, *, timeout: float | None = None,
                      setting: str | None = None, expects_response: bool = True,
                      max_version: int | None = None) -> Any:
        """Send one request to ``node`` and return the decoded answer. ``timeout`` (seconds)
        overrides the default (e.g. a smaller min(time left, request.timeout.ms))."""
        conn = await self.connection(node)
        version = self.version_for(conn, api_key, max_version)
        default, default_setting = self.request_timeout_for(api_key, body)
        if timeout is None:
            timeout, setting = default, setting or default_setting
        else:
            setting = setting or ("request.timeout.ms" if timeout == default else "the caller's timeout (time left in the call)")
        return await conn.request(int(api_key), version, body, timeout, setting, expects_response)

    def close(self) -> None:
        self.closed = True
        for conn in list(self.connections.values()):
            conn.close("the client is closing", "client")
