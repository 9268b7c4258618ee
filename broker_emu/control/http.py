"""A deliberately small HTTP/1.1 server on trio for the control API: JSON in, JSON out, one
request per connection. No dependency: the control plane must start in milliseconds and its
surface is a dozen routes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

import trio

MAX_HEADER = 16 * 1024
MAX_BODY = 1024 * 1024
REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large", 500: "Internal Server Error"}


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
        try:
            return json.loads(self.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HttpError(400, f"malformed JSON body: {exc}") from None


@dataclass
class HttpResponse:
    status: int
    body: Any
    content_type: str = "application/json"

    def encode(self) -> bytes:
        if isinstance(self.body, (bytes, str)):
            payload = self.body.encode() if isinstance(self.body, str) else self.body
        else:
            payload = (json.dumps(self.body, indent=1, default=str) + "\n").encode()
        head = (f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Status')}\r\n"
                f"Content-Type: {self.content_type}\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
        return head.encode() + payload


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


def parse_head(raw: bytes) -> tuple[str, str, dict[str, str], dict[str, str]]:
    try:
        text = raw.decode("latin-1")
        request_line, *header_lines = text.split("\r\n")
        method, target, _version = request_line.split(" ", 2)
    except ValueError:
        raise HttpError(400, "malformed request line") from None
    headers = {}
    for line in header_lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise HttpError(400, f"malformed header line {line[:60]!r}")
        headers[name.strip().lower()] = value.strip()
    url = urlsplit(target)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    return method.upper(), url.path, query, headers


async def read_request(stream: trio.abc.Stream) -> HttpRequest:
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEADER:
            raise HttpError(413, "request head too large")
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise HttpError(400, "connection closed before the request was complete")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    method, path, query, headers = parse_head(head)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise HttpError(400, "bad Content-Length") from None
    if length < 0 or length > MAX_BODY:
        raise HttpError(413, f"body of {length} bytes is over the {MAX_BODY} limit")
    body = bytearray(rest)
    while len(body) < length:
        chunk = await stream.receive_some(min(65536, length - len(body)))
        if not chunk:
            raise HttpError(400, "connection closed in the body")
        body += chunk
    return HttpRequest(method, path, query, headers, bytes(body[:length]))


async def serve_connection(stream: trio.abc.Stream, handler: Handler, token: str | None) -> None:
    async with stream:
        try:
            with trio.fail_after(30):
                request = await read_request(stream)
            if token is not None and request.headers.get("authorization") != f"Bearer {token}":
                response = HttpResponse(401, {"error": "missing or wrong bearer token"})
            else:
                response = await handler(request)
        except HttpError as exc:
            body = {"error": exc.message} | ({"field": exc.field} if exc.field else {})
            response = HttpResponse(exc.status, body)
        except trio.TooSlowError:
            return
        try:
            await stream.send_all(response.encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


async def serve_http(handler: Handler, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None,
                     allow_remote: bool = False, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled; reports the bound port through ``task_status``."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"refusing to bind the control API to {host}: not loopback (pass allow_remote=True to insist)")
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(lambda s: serve_connection(s, handler, token), listeners)
