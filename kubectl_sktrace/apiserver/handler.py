"""The server's HTTP handler: the token, discovery, get and list (JSON or kubectl's Table), watch, the answer to
"may I" (``access``: reading yes, writing no), and a 405 for every write.

Every request needs the bearer token (401 without it, compared in constant time); nothing a request says is ever
written anywhere. What a request may cost is bounded: a selector of at most ``MAX_REQUIREMENTS`` requirements and
``MAX_SELECTOR`` characters (400 beyond), a write's body read only up to ``MAX_BODY`` bytes (the connection closed
beyond), ``timeoutSeconds`` of a watch at most an hour.
"""

from __future__ import annotations

import hmac
import json
import math
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from kubectl_sktrace.apiserver import access, columns
from kubectl_sktrace.apiserver.catalog import Named, resource_list
from kubectl_sktrace.apiserver.state import Filter, Item, Served
from kubectl_sktrace.past.kinds import Kind
from sktrace_apiserver import answer, discovery, openapi, tables, watch
from sktrace_apiserver.selectors import parse_field_selector, parse_label_selector
from sktrace_apiserver.status import ApiError, not_found, object_not_found

MAX_SELECTOR = 4096
MAX_REQUIREMENTS = 64
MAX_BODY = 1 << 20
MAX_WATCH_SECONDS = 3600.0
VERSION = discovery.version_info("v1.30.0-sktrace-history")


class Serving(Protocol):
    """What a request asks of the server: its state, its token, its port and what it says a write is refused for."""

    served: Served
    token: str
    port: int
    refusal: str

    def take_slot(self) -> bool: ...

    def free_slot(self) -> None: ...


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubectl-sktrace"
    history: Serving
    timeout = 30  # an idle connection, or one whose request does not come, is closed after this long

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Requests are not logged: the server's output is its kubeconfig and its one line per failed connection."""

    def do_GET(self) -> None:
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    # plumbing

    def _send(self, code: int, body: bytes, *, headers: dict[str, str] | None = None, content_type: str = "application/json") -> None:
        answer.send(self, code, body, content_type=content_type, headers=headers)

    def _send_json(self, code: int, obj: Any, *, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)

    def _dispatch(self) -> None:
        try:
            self._skip_body()
            self._authenticate()
            if not self.history.take_slot():
                raise ApiError(429, "TooManyRequests", "too many requests at once; try again", retry_after=1)
            try:
                self._route(*_parsed(self.path))
            finally:
                self.history.free_slot()
        except ApiError as err:
            headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
            self._send_json(err.code, err.status(), headers=headers)
        except OSError:  # the client went away (a broken pipe, a reset, a TLS EOF): nothing more to say
            self.close_connection = True

    def _skip_body(self) -> None:
        """A request's body is read so that the connection stays in step (kept for an access review, else dropped); one
        too large closes it."""
        self._body = b""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = MAX_BODY + 1
        if "chunked" in self.headers.get("Transfer-Encoding", "") or length > MAX_BODY or length < 0:
            self.close_connection = True
        elif length:
            self._body = self.rfile.read(length)

    def _authenticate(self) -> None:
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.history.token.encode()):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    # routing

    def _route(self, parts: list[str], query: dict[str, str]) -> None:
        if self.command == "POST" and access.review_path(parts):
            return self._send_json(201, access.review(parts[3], _json_body(self._body), refusal=self.history.refusal))
        if self.command not in ("GET", "HEAD"):
            raise ApiError(405, "MethodNotAllowed", self.history.refusal)
        if self._about_the_server(parts):
            return None
        kinds = self.history.served.kinds
        if parts == ["api"]:
            return self._send_json(200, discovery.api_versions(self.history.port))
        groups = discovery.group_list((k.gvk.group, k.gvk.version) for k in kinds)
        if parts == ["apis"]:
            return self._send_json(200, groups)
        if len(parts) == 2 and parts[0] == "apis":
            return self._send_json(200, discovery.api_group(groups, parts[1]) or _raise(not_found()))
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise not_found()
        if not rest:
            return self._send_json(200, resource_list(kinds, group=group, version=version) or _raise(not_found()))
        self._resource_request(group, version, rest, query)

    def _about_the_server(self, parts: list[str]) -> bool:
        """The server's version, health and OpenAPI documents, answered (True) when asked."""
        if parts == ["version"]:
            self._send_json(200, VERSION)
        elif parts in (["healthz"], ["readyz"], ["livez"]):
            self._send(200, b"ok")
        elif parts[:2] == ["openapi", "v3"]:  # what kubectl reads before a write: the write then reaches the 405
            found = openapi.v3([Named.of(k) for k in self.history.served.kinds], parts[2:], git_version=VERSION["gitVersion"], revision="1")
            self._send_json(200, found or _raise(not_found()))
        elif parts == ["openapi", "v2"]:
            self._send(200, openapi.v2_protobuf(VERSION["gitVersion"]), content_type=openapi.V2_CONTENT_TYPE)
        else:
            return False
        return True

    def _resource_request(self, group: str, version: str, rest: list[str], query: dict[str, str]) -> None:
        by_plural = {(k.gvk.group, k.gvk.version, k.plural): k for k in self.history.served.kinds}
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in by_plural:
            namespace, rest = rest[1], rest[2:]
        resource = by_plural.get((group, version, rest[0]))
        if resource is None or (namespace is not None and not resource.namespaced) or len(rest) > 2:
            raise not_found()
        if len(rest) == 2:
            return self._get(resource, namespace or "", rest[1])
        flt = Filter(namespace=namespace if resource.namespaced else None, labels=_labels(query), fields=_fields(query, Named.of(resource)))
        if query.get("watch") in ("1", "true", "True"):
            return self._watch(resource, flt, query)
        return self._list(resource, flt, query)

    # reads

    def _wants_table(self) -> bool:
        return "as=Table" in self.headers.get("Accept", "")

    def _get(self, resource: Kind, namespace: str, name: str) -> None:
        item, now = self.history.served.get(resource.gvk, namespace if resource.namespaced else "", name)
        if item is None:
            raise object_not_found(group=resource.gvk.group, plural=resource.plural, name=name)
        if self._wants_table():
            return self._send_json(200, columns.table(resource, [item], second=math.floor(now), rv=str(self.history.served.rv)))
        self._send(200, item.raw)

    def _list(self, resource: Kind, flt: Filter, query: dict[str, str]) -> None:
        limit = _number(query.get("limit") or "0", name="limit")
        rv, items, cont, remaining, now = self.history.served.list_page(resource.gvk, flt, limit=limit, token=query.get("continue", ""))
        if self._wants_table():
            return self._send_json(200, columns.table(resource, items, second=math.floor(now), rv=str(rv), cont=cont, remaining=remaining))
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if cont:
            meta["continue"] = cont
            meta["remainingItemCount"] = remaining
        head = json.dumps({"kind": f"{resource.gvk.kind}List", "apiVersion": resource.gvk.api_version, "metadata": meta}, separators=(",", ":")).encode()
        self._send(200, b"".join([head[:-1], b',"items":[', b",".join(i.item_raw() for i in items), b"]}"]))

    def _watch(self, resource: Kind, flt: Filter, query: dict[str, str]) -> None:
        served = self.history.served
        seconds = float(_number(query["timeoutSeconds"], name="timeoutSeconds")) if query.get("timeoutSeconds") else MAX_WATCH_SECONDS
        deadline = time.monotonic() + min(seconds, MAX_WATCH_SECONDS)
        as_table = self._wants_table()
        error: ApiError | None = None
        try:
            initial, position = served.watch_start(resource.gvk, flt, query.get("resourceVersion", ""))
        except ApiError as exc:
            if exc.code != 410:
                raise
            error, initial, position = exc, [], 0
        served.watched.set()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if error is not None:
            self.wfile.write(watch.chunk(watch.error_line(error.status())) + watch.END)
            return
        for item in initial:
            self.wfile.write(watch.chunk(self._event(resource, "ADDED", item, rv=served.rv, now=served.now, as_table=as_table)))
        self._follow(resource, flt, position, deadline=deadline, as_table=as_table)

    def _follow(self, resource: Kind, flt: Filter, position: int, *, deadline: float, as_table: bool) -> None:
        served = self.history.served
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or served.stopped:
                self.wfile.write(watch.END)
                return
            events, now = served.since(position, wait=min(left, 1.0))
            if events is None:
                expired = ApiError(410, "Expired", f"too old resource version: {position} ({served.rv})")
                self.wfile.write(watch.chunk(watch.error_line(expired.status())) + watch.END)
                return
            position += len(events)
            for event in events:
                if event.gvk == resource.gvk and flt.matches(event.item):
                    self.wfile.write(watch.chunk(self._event(resource, event.type, event.item, rv=event.rv, now=now, as_table=as_table)))

    def _event(self, resource: Kind, event_type: str, item: Item, *, rv: int, now: float, as_table: bool) -> bytes:
        if as_table:
            return tables.event_line(event_type, columns.table(resource, [item], second=math.floor(now), rv=str(rv)))
        return watch.event_line(event_type, item.raw)


def _parsed(path: str) -> tuple[list[str], dict[str, str]]:
    """The path's parts and its query (the last value of each name); a path that cannot be read is a 400."""
    try:
        split = urlsplit(path)
        query = parse_qs(split.query, keep_blank_values=True, strict_parsing=False, errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "BadRequest", "the request's path or query cannot be read") from None
    return [p for p in split.path.split("/") if p], {k: v[-1] for k, v in query.items()}


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError too; nested past the parser's depth
        raise ApiError(400, "BadRequest", "the request's body is not JSON, or nests too deep to read") from None


def _raise(error: ApiError) -> Any:
    raise error


def _number(text: str, *, name: str) -> int:
    if not text.isdigit() or len(text) > 9:
        raise ApiError(400, "BadRequest", f"{name} must be a whole number of at most 9 digits, not {text[:40]!r}")
    return int(text)


def _checked(text: str, *, name: str) -> str:
    if len(text) > MAX_SELECTOR:
        raise ApiError(400, "BadRequest", f"the {name} is {len(text)} characters long; this server takes at most {MAX_SELECTOR}")
    return text


def _labels(query: dict[str, str]) -> tuple[Any, ...]:
    requirements = parse_label_selector(_checked(query.get("labelSelector", ""), name="label selector"))
    if len(requirements) > MAX_REQUIREMENTS:
        raise ApiError(400, "BadRequest", f"the label selector has {len(requirements)} requirements; this server takes at most {MAX_REQUIREMENTS}")
    return requirements


def _fields(query: dict[str, str], resource: Named) -> tuple[Any, ...]:
    requirements = parse_field_selector(_checked(query.get("fieldSelector", ""), name="field selector"), resource)
    if len(requirements) > MAX_REQUIREMENTS:
        raise ApiError(400, "BadRequest", f"the field selector has {len(requirements)} requirements; this server takes at most {MAX_REQUIREMENTS}")
    return requirements
