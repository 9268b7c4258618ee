"""A deliberately small HTTP/1.1 server on trio for the control API: JSON in, JSON out, one
request per connection. No dependency: the control plane must start in milliseconds and its
surface is a dozen routes.

Theory of operation. The control listener shares the process with the emulated cluster, so
nothing a request says may take the process down: the head and the body are bounded, JSON is
bounded in depth and may not hold NaN or Infinity, every failure a route can foresee is an
``HttpError`` (a 4xx with ``{"error", "field"}``), and anything else becomes a 500 for that
request only, logged. Before a route runs, ``Policy.check`` refuses what a web page could make
a browser send (the CSRF and DNS-rebinding shapes, see ``Policy``).
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

import trio

from broker_emu.control.loopback import is_loopback

log = logging.getLogger("broker_emu.control")

MAX_HEADER = 16 * 1024
MAX_BODY = 1024 * 1024
MAX_DEPTH = 32          # a rule is 3 deep; a list of rules 4
REQUEST_TIMEOUT_S = 30
REASONS = {200: "OK", 201: "Created", 302: "Found", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 408: "Request Timeout",
           405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large", 415: "Unsupported Media Type",
           500: "Internal Server Error", 503: "Service Unavailable"}
SINGLE_HEADERS = ("host", "origin", "content-length", "content-type", "authorization", "transfer-encoding")


class HttpError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None):
        self.status, self.message, self.field = status, message, field
        super().__init__(message)


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        if not self.body.strip():
            return {}
        return parse_json(self.body)


def parse_json(body: bytes) -> Any:
    """Parse a request body: bounded depth, finite numbers only (a NaN or an Infinity is named by
    its path, e.g. ``lag_ms``, so the error says which field to fix)."""
    try:
        doc = json.loads(body)
    except RecursionError:
        raise HttpError(400, f"JSON nested deeper than {MAX_DEPTH} levels", "body") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, and ints over 4300 digits
        raise HttpError(400, f"malformed JSON body: {exc}", "body") from None
    check_json(doc)
    return doc


def check_json(doc: Any) -> None:
    stack: list[tuple[Any, str, int]] = [(doc, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise HttpError(400, f"JSON nested deeper than {MAX_DEPTH} levels", "body")
        if isinstance(value, float) and not math.isfinite(value):
            where = path or "body"
            raise HttpError(400, f"{where}: must be a finite number, got {value} (NaN and Infinity are not JSON)", where)
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))


@dataclass
class HttpResponse:
    status: int
    body: Any
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()   # e.g. (("Location", "/console"),)

    def encode(self) -> bytes:
        if isinstance(self.body, (bytes, str)):
            payload = self.body.encode() if isinstance(self.body, str) else self.body
        else:  # allow_nan=False: what we send is always JSON, never Python's NaN
            payload = (json.dumps(self.body, indent=1, default=str, allow_nan=False) + "\n").encode()
        head = (f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Status')}\r\n"
                f"Content-Type: {self.content_type}\r\nContent-Length: {len(payload)}\r\n"
                + "".join(f"{name}: {value}\r\n" for name, value in self.headers)
                + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n")
        return head.encode() + payload


@dataclass
class StreamResponse:
    """A response whose body is written as it is produced (server-sent events): no length, the
    connection closes when ``chunks`` ends or the client goes away."""

    chunks: Callable[[], Any]   # () -> AsyncIterator[bytes]
    content_type: str = "text/event-stream"

    def head(self) -> bytes:
        return (f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\nCache-Control: no-store\r\n"
                "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n").encode()


def error_response(status: int, message: str, field: str | None = None) -> HttpResponse:
    return HttpResponse(status, {"error": message} | ({"field": field} if field else {}))


Handler = Callable[[HttpRequest], Awaitable["HttpResponse | StreamResponse"]]


def parse_head(raw: bytes) -> tuple[str, str, dict[str, str], dict[str, str]]:
    text = raw.decode("latin-1")
    request_line, *header_lines = text.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/"):
        raise HttpError(400, "malformed request line", "request-line")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in header_lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        name = name.strip().lower()
        if not sep or not name:
            raise HttpError(400, f"malformed header line {line[:60]!r}", "headers")
        if name in headers and name in SINGLE_HEADERS:
            raise HttpError(400, f"header {name} given twice", name)
        headers[name] = value.strip()
    try:
        url = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True, max_num_fields=50).items()}
    except ValueError as exc:
        raise HttpError(400, f"malformed request target: {exc}", "request-line") from None
    if not url.path.startswith("/"):
        raise HttpError(400, "the request target must be a path", "request-line")
    return method.upper(), url.path, query, headers


async def read_request(stream: trio.abc.Stream) -> HttpRequest:
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEADER:
            raise HttpError(413, f"request head over the {MAX_HEADER}-byte limit", "headers")
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise HttpError(400, "connection closed before the request was complete")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    method, path, query, headers = parse_head(head)
    if "transfer-encoding" in headers:
        raise HttpError(400, "Transfer-Encoding is not supported: send Content-Length", "Transfer-Encoding")
    text = headers.get("content-length", "0")
    if not re.fullmatch(r"[0-9]{1,10}", text):
        raise HttpError(400, f"bad Content-Length {text[:20]!r}", "Content-Length")
    length = int(text)
    if length > MAX_BODY:
        raise HttpError(413, f"body of {length} bytes is over the {MAX_BODY}-byte limit", "body")
    body = bytearray(rest)
    while len(body) < length:
        chunk = await stream.receive_some(min(65536, length - len(body)))
        if not chunk:
            raise HttpError(400, "connection closed in the body")
        body += chunk
    return HttpRequest(method, path, query, headers, bytes(body[:length]))


def host_of(authority: str) -> str:
    """The host of a ``Host`` header value: ``127.0.0.1:9080``, ``[::1]:9080``, ``localhost``."""
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


@dataclass
class Policy:
    """What the control listener accepts beyond the routes' own validation.

    A web page can make a browser send a "simple" cross-origin request without asking first (no
    CORS preflight): a POST with ``Content-Type: text/plain``, a form, or a fetch in ``no-cors``
    mode. It cannot read the answer, but ``POST /brokers/0/stop`` does its harm on arrival. So:
    bodies must be ``application/json`` (which a page can only send after a preflight we never
    grant); a request carrying an ``Origin`` other than the listener's own loopback origin, or
    ``Sec-Fetch-Site: cross-site``/``same-site``, is refused; and unless remote control is on,
    a ``Host`` that is not a loopback name is refused, which defeats DNS rebinding (a page whose
    own name was made to resolve to 127.0.0.1 still sends its own name as Host). Non-browser
    clients (curl, the CLI) send no Origin and pass.
    """

    port: int
    token: str | None = None
    allow_remote: bool = False
    # static files that hold no cluster data and change nothing (the console's page and scripts:
    # a browser cannot send a bearer token when it navigates; the page sends it on its own requests)
    public_paths: frozenset[str] = frozenset()

    def origins(self) -> set[str]:
        return {f"http://{h}:{self.port}" for h in ("127.0.0.1", "localhost", "[::1]")}

    def check(self, request: HttpRequest) -> None:
        headers = request.headers
        host = headers.get("host")
        if host is not None and not self.allow_remote and not is_loopback(host_of(host)):
            raise HttpError(403, f"Host {host[:80]!r} is not a loopback name (DNS rebinding?)", "Host")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins():
            raise HttpError(403, f"cross-origin request from {origin[:80]!r} refused", "Origin")
        site = headers.get("sec-fetch-site", "none").lower()
        if site not in ("none", "same-origin"):
            raise HttpError(403, f"browser request from a {site} page refused", "Sec-Fetch-Site")
        if self.token is not None and request.method == "GET" and request.path in self.public_paths:
            return
        if self.token is not None and not hmac.compare_digest(
                headers.get("authorization", "").encode(), f"Bearer {self.token}".encode()):
            raise HttpError(401, "missing or wrong bearer token", "Authorization")
        ctype = headers.get("content-type")
        if request.body or ctype is not None:
            media, _, params = (ctype or "").partition(";")
            charset = re.search(r"charset=\"?([^\";\s]+)", params, re.I)
            if media.strip().lower() != "application/json" or (charset and charset.group(1).lower() != "utf-8"):
                raise HttpError(415, f"send JSON bodies as Content-Type: application/json, got {ctype!r}", "Content-Type")


async def respond(request: HttpRequest, handler: Handler, policy: Policy) -> HttpResponse | StreamResponse:
    try:
        policy.check(request)
        return await handler(request)
    except HttpError as exc:
        return error_response(exc.status, exc.message, exc.field)
    except Exception as exc:  # a bug in a route: this request fails, the process stays up
        log.exception("control API: %s %s failed", request.method, request.path[:200])
        return error_response(500, f"internal error: {type(exc).__name__}: {str(exc)[:200]}")


def encode_safely(response: HttpResponse) -> bytes:
    try:
        return response.encode()
    except Exception as exc:  # e.g. a value json cannot encode
        log.exception("control API: cannot encode a %d answer", response.status)
        return error_response(500, f"internal error: cannot encode the answer: {type(exc).__name__}").encode()


async def linger(stream: trio.abc.Stream) -> None:
    """Half-close, then read and drop what the client still sends (a body we refused unread) until
    it closes: closing with unread input makes the kernel reset the connection, and the client
    could lose our answer."""
    if isinstance(stream, trio.SocketStream):
        await stream.send_eof()
    with trio.move_on_after(1):
        for _ in range(64):
            if not await stream.receive_some(65536):
                break


async def serve_connection(stream: trio.abc.Stream, handler: Handler, policy: Policy) -> None:
    try:
        async with stream:
            response: HttpResponse | StreamResponse
            try:
                with trio.fail_after(REQUEST_TIMEOUT_S):
                    request = await read_request(stream)
            except HttpError as exc:
                response = error_response(exc.status, exc.message, exc.field)
            else:
                response = await respond(request, handler, policy)
            if isinstance(response, StreamResponse):
                await stream.send_all(response.head())
                async with aclosing(response.chunks()) as chunks:   # its finally runs when the client goes
                    async for chunk in chunks:
                        await stream.send_all(chunk)
                return
            await stream.send_all(encode_safely(response))
            await linger(stream)
    except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass  # the client went away or stalled: nothing to answer
    except Exception:
        log.exception("control API: connection failed")


async def serve_http(handler: Handler, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None,
                     allow_remote: bool = False, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled; reports the bound port through ``task_status``. A non-loopback
    bind needs ``allow_remote`` and a ``token``: the API can stop brokers."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"refusing to bind the control API to {host}: not loopback (pass allow_remote=True to insist)")
    if allow_remote and not token:
        raise ValueError("remote control needs a token: anyone who can reach the control API could stop brokers")
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    policy = Policy(bound, token, allow_remote, frozenset(getattr(handler, "public_paths", ())))
    task_status.started(bound)

    async def handle(stream: trio.SocketStream) -> None:
        await serve_connection(stream, handler, policy)

    await trio.serve_listeners(handle, listeners)
