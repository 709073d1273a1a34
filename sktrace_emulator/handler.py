"""The emulator's HTTP handler: the Kubernetes REST paths, discovery, chunked watch streams (Table output: ``tables``).

HTTP/1.1 with keep-alive, one thread per connection. Watch streams are chunked, one JSON event per line;
a watcher reads its kind's history from its own position under the store's condition. With the default
framing (``per-event``) every event is its own chunk, sent at once, as a real API server sends it: a reader
that keeps up pays one socket wakeup per event, and one that reads chunk by chunk (``http.client``'s
``read1``) one read per event even in a burst. With ``batched`` a burst of writes goes out as one chunk of
many lines (the synthetic ADDED events by 1,000): a way to measure a reader's ceiling, not what a real server
does. Nothing is serialized twice (every object's bytes were made once, when it changed). Requests pass the
``Emulator``'s fault knobs and RBAC before they reach the store.
"""

from __future__ import annotations


import json
import os
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from sktrace_apiserver import answer
from sktrace_apiserver import discovery as protocol
from sktrace_apiserver import openapi as protocol_openapi
from sktrace_apiserver import watch as framing
from sktrace_emulator import apf, audit, deletes, discovery, openapi, scale
from sktrace_emulator.records import ApiError, Failure, History, Obj, ResourceType, Stored, forbidden, not_found
from sktrace_emulator.selectors import (
    Filter,
    parse_field_selector,
    parse_label_selector,
)
from sktrace_emulator.state import Store
from sktrace_emulator.tables import table, table_event



# What a list page costs a real API server before its first byte: it reads the page's objects and encodes them
# for each request, so the time grows with the page. Kubernetes v1.28 on 2 cores spent ~8 s encoding 50,000
# pods of ~7 KB as JSON (docs/architecture.md, facts measured on real servers): 8 s / 350 MB, about 23 ms per
# MB, 80 ms for a page of 500 such pods.
LIST_SECONDS_PER_MB = 0.023


def page_delay(size: int, seconds_per_mb: float) -> float:
    """Seconds to wait before sending a list page of ``size`` bytes (0 when the cost model is off)."""
    return size * seconds_per_mb / 1_000_000 if seconds_per_mb > 0 else 0.0


_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


class _Dropped(Exception):
    """The watch was cut by ``drop_watches``: close the socket without the terminating chunk."""


class Serving(Protocol):
    """What a request handler asks of the emulator serving it (``server.Emulator``): its store, its settings and
    the faults a test armed."""

    store: Store
    port: int
    framing: str
    bookmark_interval: float
    list_seconds_per_mb: float
    drop_generation: int
    unauthorized: int
    delay: float
    apf: apf.PriorityLevel | None

    def authenticate(self, authorization: str, connection: Any) -> str: ...

    def denies(self, verb: str, rtype: ResourceType, namespace: str | None, name: str = "") -> bool: ...

    def take_failure(self, kind: str) -> Failure | None: ...

    def take_forced_410(self, kind: str) -> bool: ...

    def serves(self, server: object) -> bool: ...


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    emulator: Serving
    server_version = "sktrace-emulator"
    _seat = apf.Seat(None, 0)  # the APF seats of the request being served
    _raw = b""  # the body of the request being served, as it came (``_read_body``)
    _user = ""  # who sent it: ``Emulator.authenticate``
    _audit: audit.Request | None = None  # the request being served, as the audit log tells it; its answer's status and body:
    _answer = (0, b"")

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle + delayed ACK add 40 ms each
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if os.environ.get("SKTRACE_EMULATOR_LOG"):
            super().log_message(format, *args)

    # plumbing

    def _send_bytes(self, code: int, body: bytes, *, headers: dict[str, str] | None = None, content_type: str = "application/json") -> None:
        self._answer = (code, body)
        self._audited()  # before the answer leaves: a client that read it finds the line written
        answer.send(self, code, body, content_type=content_type, headers=headers)

    def _send_json(self, code: int, obj: Any, *, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(code, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)

    def _send_error(self, err: ApiError) -> None:
        headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
        self._send_json(err.code, err.status(), headers=headers)

    def _read_body(self) -> bytes:
        """The request's body, read whole before anything is answered (a request refused unread would leave its
        body on the connection, to be taken for the next request)."""
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", ""):
                return self._read_chunked()  # kubectl create --raw -f FILE streams the file
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise ApiError(400, "BadRequest", "the request body's length or chunks are not valid") from None
        return self.rfile.read(length) if length else b""

    def _body(self) -> Any:
        raw = self._raw
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            pass
        try:
            import yaml  # kubectl sends JSON; YAML bodies come only from hand-made requests

            return yaml.safe_load(raw)
        except Exception:
            raise ApiError(400, "BadRequest", "the request body is not valid JSON") from None

    def _request_object(self, verb: str) -> Any:
        """What the audit log keeps of the request: its body, for every write that sent one (a delete's ``DeleteOptions``
        included, as kube-apiserver logs them)."""
        try:
            return self._body() if verb in ("create", "update", "patch", "delete", "deletecollection") else None
        except ApiError:
            return None

    def _read_chunked(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # the trailer
            pass
        return b"".join(chunks)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        emu = self.emulator
        try:
            self._raw = self._read_body()
            if emu.delay:
                time.sleep(emu.delay)
            self._user = emu.authenticate(self.headers.get("Authorization", ""), self.connection)
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            parts = [p for p in split.path.split("/") if p]
            self._route(parts, query)
        except ApiError as err:
            self._send_error(err)
        except apf.Rejected as rejected:
            apf.send_rejection(self, rejected)
        except _Dropped:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except OSError:  # the client went away (broken pipe, reset, TLS EOF): nothing left to answer
            self.close_connection = True
        finally:
            self._audited()  # a watch, answered as it streamed

    def _audited(self) -> None:
        request, log, self._audit = self._audit, self.emulator.store.audit, None
        code, raw = self._answer if self._answer[0] else (200, b"")  # a watch streams: 200, no body
        self._answer = (0, b"")
        if request is not None and log is not None:
            gone = self.emulator.store.get(request.rtype, request.namespace if request.rtype.namespaced else "", request.name) is None
            log.answered(request, code=code, raw=raw, gone=gone)

    # routing

    def _route(self, parts: list[str], query: dict[str, str]) -> None:
        store = self.emulator.store
        if parts == ["version"]:
            return self._send_json(200, discovery.SERVER_VERSION)
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return self._send_bytes(200, b"ok")
        if parts[:2] == ["openapi", "v3"]:
            return self._send_json(200, openapi.v3(self.emulator.store, parts[2:]))
        if parts == ["openapi", "v2"]:
            return self._send_bytes(200, openapi.v2_protobuf(), content_type=protocol_openapi.V2_CONTENT_TYPE)
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts in (["api"], ["apis"]) or (parts[:1] == ["apis"] and len(parts) == 2):
            group, version, rest = "", "", []
        else:
            raise not_found()
        if not rest:  # discovery: admitted as a one-seat get of no resource
            with apf.admit(self.emulator.apf, verb="get", stored=0, query={}, user_agent=self.headers.get("User-Agent", "")):
                return self._discovery(parts, group, version)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in store.by_plural:
            namespace, rest = rest[1], rest[2:]
        rtype = store.by_plural.get((group, version, rest[0]))
        if rtype is None or (namespace is not None and not rtype.namespaced):
            raise not_found()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if subresource not in ("", "status") and not (subresource == "scale" and scale.scalable(rtype)):
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({subresource})")
        verb = _request_verb(self.command, name=name, watch=query.get("watch") in ("1", "true", "True"))
        # the API server's request info puts a namespace's own path inside that namespace
        scope = name if (rtype.group, rtype.plural) == ("", "namespaces") and name else namespace
        if self.emulator.store.audit is not None:
            sent = self._request_object(verb)
            self._audit = audit.Request(verb, self.path, self._user, rtype, scope or "", name or audit.named_in(sent, verb), subresource,
                                        self.headers.get("User-Agent", ""), request_object=sent)
            self.emulator.store.audit.begin(self._audit)
        if self.emulator.denies(verb, rtype, scope, name):
            raise forbidden(user=self._user, verb=verb, rtype=rtype, namespace=scope, name=name, subresource=subresource)
        failure = self.emulator.take_failure(rtype.kind)
        if failure is not None:
            if failure.status == 403:
                raise forbidden(user=self._user, verb=verb, rtype=rtype, namespace=scope, name=name, subresource=subresource)
            reason = _REASONS.get(failure.status, "InternalError")
            message = "Unauthorized" if failure.status == 401 else f"emulated failure {failure.status}"
            raise ApiError(failure.status, reason, message, retry_after=failure.retry_after)
        with apf.admit(self.emulator.apf, verb=verb, stored=len(store.objects.get(rtype, ())), query=query,
                       user_agent=self.headers.get("User-Agent", ""), resource=rtype.plural) as self._seat:
            self._resource(rtype, namespace, name, subresource, query)

    def _discovery(self, parts: list[str], group: str, version: str) -> None:
        store = self.emulator.store
        if parts == ["api"]:
            return self._send_json(200, protocol.api_versions(self.emulator.port))
        if parts == ["apis"]:
            return self._send_json(200, discovery.group_list(store))
        if len(parts) == 2 and parts[0] == "apis":
            group_doc = protocol.api_group(discovery.group_list(store), parts[1])
            if group_doc is None:
                raise not_found()
            return self._send_json(200, group_doc)
        return self._send_json(200, discovery.resource_list(store, group, version))

    def _resource(self, rtype: ResourceType, namespace: str | None, name: str, subresource: str, query: dict[str, str]) -> None:
        store = self.emulator.store
        method = self.command
        ns = namespace if rtype.namespaced else ""
        if subresource == "scale":
            patch_type = "json" if "json-patch" in self.headers.get("Content-Type", "") else "merge"
            body = self._body() if method in ("PUT", "PATCH") else None
            return self._send_json(200, scale.serve(store, rtype, ns or "", name, method=method, body=body, patch_type=patch_type))
        if method == "GET" and not name:
            flt = Filter(
                namespace=namespace if rtype.namespaced else None,
                labels=parse_label_selector(query.get("labelSelector", "")),
                fields=parse_field_selector(query.get("fieldSelector", ""), rtype),
            )
            if query.get("watch") in ("1", "true", "True"):
                return self._watch(rtype, flt, query)
            return self._list(rtype, flt, query)
        if method == "GET":
            stored = store.get(rtype, ns or "", name)
            if stored is None:
                raise store._not_found(rtype, name)
            if self._wants_table():
                return self._send_json(200, table(rtype, [stored], rv=stored.rv, cont="", remaining=0))
            return self._send_bytes(200, stored.raw)
        if method == "POST" and not name:
            body = self._object_body(rtype)
            warned = self._field_warnings(rtype, query)
            return self._send_bytes(201, store.create(rtype, body, namespace=namespace).raw, headers=warned)
        if method == "PUT" and name:
            body = self._object_body(rtype)
            warned = self._field_warnings(rtype, query)
            body.setdefault("metadata", {}).setdefault("name", name)
            if body["metadata"]["name"] != name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            return self._send_bytes(200, store.update(rtype, body, namespace=namespace, subresource=subresource).raw, headers=warned)
        if method == "PATCH" and name:
            content_type = self.headers.get("Content-Type", "")
            if "apply-patch" in content_type:
                raise ApiError(415, "UnsupportedMediaType", "server-side apply is not supported by the emulator; use client-side kubectl apply")
            patch_type = "json" if "json-patch" in content_type else "strategic" if "strategic-merge-patch" in content_type else "merge"
            patch = self._body()
            warned = self._field_warnings(rtype, query, strategic=patch_type == "strategic")
            return self._send_bytes(200, store.patch(rtype, ns or "", name, patch, patch_type=patch_type, subresource=subresource).raw, headers=warned)
        if method == "DELETE" and name:
            options = self._body() or {}
            grace = query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
            policy = query.get("propagationPolicy", options.get("propagationPolicy", "Background"))
            stored = store.delete(rtype, ns or "", name, grace_seconds=None if grace is None else int(grace), propagate=policy != "Orphan")
            if rtype.kind != "Pod" and store.get(rtype, stored.namespace, name) is None:  # gone: a Status, as a real server answers
                return self._send_json(200, audit.deleted_status(rtype, stored.obj()))
            return self._send_bytes(200, stored.raw)  # a pod answers the Pod; one only marked (finalizers) answers the object
        if method == "DELETE" and not subresource:
            return self._delete_collection(rtype, ns or "", query)
        raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})")

    def _delete_collection(self, rtype: ResourceType, namespace: str, query: dict[str, str]) -> None:
        flt = Filter(namespace=namespace if rtype.namespaced else None, labels=parse_label_selector(query.get("labelSelector", "")),
                     fields=parse_field_selector(query.get("fieldSelector", ""), rtype))
        self._send_json(200, deletes.collection(self.emulator.store, rtype, namespace, flt))

    def _object_body(self, rtype: ResourceType) -> Obj:
        body = self._body()
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        if body.get("kind", rtype.kind) != rtype.kind or body.get("apiVersion", rtype.api_version) != rtype.api_version:
            raise ApiError(400, "BadRequest", f"the body is a {body.get('apiVersion')}/{body.get('kind')}, the URL is for {rtype.api_version}/{rtype.kind}")
        return body

    def _field_warnings(self, rtype: ResourceType, query: dict[str, str], *, strategic: bool = False) -> dict[str, str] | None:
        """``fieldValidation`` on the body just read (``openapi``): a 400 for ``Strict``, ``Warning`` headers for ``Warn``."""
        found = openapi.check_fields(self._raw, rtype, query.get("fieldValidation", ""), strategic=strategic)
        return {"Warning": ", ".join('299 - ' + json.dumps(w) for w in found)} if found else None

    # list

    def _wants_table(self) -> bool:
        accept = self.headers.get("Accept", "")
        return "as=Table" in accept

    def _list(self, rtype: ResourceType, flt: Filter, query: dict[str, str]) -> None:
        limit = int(query.get("limit") or 0)
        rv, items, cont, remaining = self.emulator.store.list_page(rtype, flt, limit=limit, token=query.get("continue", ""))
        if self._wants_table():
            body = json.dumps(table(rtype, items, rv=rv, cont=cont, remaining=remaining), separators=(",", ":")).encode()
        else:
            meta: Obj = {"resourceVersion": str(rv)}
            if cont:
                meta["continue"] = cont
                meta["remainingItemCount"] = remaining
            head = json.dumps({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta}, separators=(",", ":")).encode()
            body = b"".join([head[:-1], b',"items":[', b",".join(s.item_raw() for s in items), b"]}"])
        # the objects' bytes were made once, when they changed: the page costs what a real server's encoding would
        delay = page_delay(len(body), self.emulator.list_seconds_per_mb)
        if delay:
            time.sleep(delay)
        self._send_bytes(200, body)

    # watch

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk, sent at once: ``wfile`` is unbuffered (``wbufsize = 0``), so one write is one
        ``sendall`` (one TLS record up to 16 KB), as a real server's ``Flush`` after each event."""
        self.wfile.write(framing.chunk(data))

    def _watch(self, rtype: ResourceType, flt: Filter, query: dict[str, str]) -> None:
        emu, store = self.emulator, self.emulator.store
        as_table = self._wants_table()
        rv_param = query.get("resourceVersion", "")
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true", "True")
        generation = emu.drop_generation
        initial: list[Stored] = []
        error: ApiError | None = None
        with store.lock:
            history = store.histories.get(rtype)
            if history is None:  # its CRD was deleted since the request was routed
                raise not_found()
            told = history.last_rv  # the kind's version now: bookmarks only once it moves
        if emu.take_forced_410(rtype.kind):
            error = ApiError(410, "Expired", f"too old resource version: {rv_param or store.rv} ({store.rv})")
            position = 0
        elif rv_param in ("", "0"):
            with store.lock:
                _, initial = store.current(rtype, flt)
                position = history.end()
        else:
            try:
                position = store.watch_start(rtype, int(rv_param))
            except ValueError:
                raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv_param!r}") from None
            except ApiError as exc:
                error = exc
        self._seat.release()  # APF: a watch holds its seat only while it starts (released before its headers go out)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if error is not None:
            return self._end_with_error(error)
        self._stream(rtype, flt, initial, position, as_table=as_table, timeout=timeout, bookmarks=bookmarks, generation=generation,
                     history=history, told=told)

    def _stream(self, rtype: ResourceType, flt: Filter, initial: list[Stored], position: int, *, as_table: bool, timeout: float | None,
                bookmarks: bool, generation: int, history: History, told: int) -> None:
        emu, store = self.emulator, self.emulator.store
        def encode(event_type: str, stored: Stored) -> bytes:
            if as_table:
                return table_event(rtype, event_type, stored)
            return framing.event_line(event_type, stored.raw)

        batched = emu.framing == "batched"
        if batched:
            for start in range(0, len(initial), 1000):
                self._write_chunk(b"".join(encode("ADDED", s) for s in initial[start : start + 1000]))
        else:
            for stored in initial:
                self._write_chunk(encode("ADDED", stored))
        del initial
        now = time.monotonic()
        deadline = now + timeout if timeout is not None else None
        next_bookmark = now + emu.bookmark_interval  # and only once the kind's version moved past ``told``
        while True:
            with store.changed:
                while True:
                    if emu.drop_generation != generation or not emu.serves(self.server):
                        raise _Dropped()  # dropped, or its server stopped (a connection accepted while it stopped)
                    events = history.since(position)
                    gone = store.histories.get(rtype) is not history  # its CRD was deleted: the stream ends after its events
                    if events is None or events or gone:
                        break
                    now = time.monotonic()
                    wake = next_bookmark if bookmarks else float("inf")
                    if deadline is not None:
                        wake = min(wake, deadline)
                    if wake <= now:
                        break
                    store.changed.wait(min(wake - now, 1.0))
                current_rv = store.rv
            if events is None:
                return self._end_with_error(ApiError(410, "Expired", f"too old resource version: {position} ({current_rv})"))
            if events:
                position += len(events)
                if batched:
                    data = b"".join(encode(e.type, e.stored) for e in events if flt.matches(e.stored))
                    if data:
                        self._write_chunk(data)
                else:
                    for event in events:
                        if flt.matches(event.stored):
                            self._write_chunk(encode(event.type, event.stored))
                continue
            now = time.monotonic()
            if gone or (deadline is not None and now >= deadline):
                self.wfile.write(framing.END)
                return
            if bookmarks and now >= next_bookmark:
                next_bookmark = now + emu.bookmark_interval
                if history.last_rv > told:  # a real server is silent on a kind whose version does not move
                    told = history.last_rv
                    self._write_chunk(framing.bookmark_line(kind=rtype.kind, api_version=rtype.api_version, rv=str(told)))

    def _end_with_error(self, error: ApiError) -> None:
        self._write_chunk(framing.error_line(error.status()))
        self.wfile.write(framing.END)


def _request_verb(method: str, *, name: str, watch: bool) -> str:
    """The RBAC verb of a resource request, as the API server derives it from the method and the path."""
    if method in ("GET", "HEAD"):
        return "watch" if watch else "get" if name else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
