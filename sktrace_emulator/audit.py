"""The API server's audit log (``--audit-log-path``, ``--audit-log-format json``), as kube-apiserver writes it.

Off by default and then free: nothing is looked at unless ``Emulator.enable_audit`` was called. On, every request
and every write the emulator's controllers make (garbage collection, the namespace controller, the ``Workload``'s
controllers and kubelet, calls of ``Emulator.create`` and friends) is one ``audit.k8s.io/v1`` Event per stage, one
JSON line each, as on a real v1.28 server (docs: NOTES.md, "Audit log"):

- a **policy** decides the level of each request, first matching rule wins: ``None``, ``Metadata`` (no bodies),
  ``Request`` (adds ``requestObject``: the body sent, for a patch the patch itself), ``RequestResponse`` (adds
  ``responseObject``: the object after a create, update or patch). Rules match ``verbs``, ``resources``
  (``{group, resources}``: ``pods`` the resource, ``pods/status`` a subresource, ``pods/*`` and ``*/scale``),
  ``namespaces`` and ``users``; ``omitStages`` globally and per rule. A request no rule matches is not logged;
- the stages: ``RequestReceived`` (no response) unless omitted, then ``ResponseComplete``;
- the fields: ``level``, ``auditID``, ``stage``, ``requestURI``, ``verb``, ``user.username``, ``userAgent``,
  ``objectRef`` (``resource`` plural, ``namespace``, ``name``, ``apiGroup`` absent for the core group,
  ``apiVersion``, ``subresource``; ``uid`` and ``resourceVersion`` only for updates, never for deletes: measured),
  ``responseStatus.code``,
  ``requestReceivedTimestamp`` and ``stageTimestamp`` in RFC 3339 with microseconds;
- answers: a delete that removed the object answers a ``Status`` whose ``details`` hold ``name``, ``group``, ``kind``
  (the plural) and ``uid``; one that only marked it (finalizers, a namespace terminating) answers the object; a pod's
  DELETE always answers the Pod (graceful: ``deletionGracePeriodSeconds`` 30; the kubelet's final one: 0; ``deletes``);
  a ``deletecollection`` answers the list as it was; a write of the ``scale`` subresource answers the ``autoscaling/v1``
  Scale; a binding a ``Status`` (201); failed requests (403, 404, 409) are logged with their Status;
- writers: the controllers as their service accounts (``system:serviceaccount:kube-system:replicaset-controller``,
  ``job-controller``, ``deployment-controller``, ``namespace-controller``, ``generic-garbage-collector``), the binding
  as ``system:kube-scheduler``, the kubelet's ``patch pods/status`` and final deletes as ``system:node:<node>``
  (``AuditLog.acting``); other writes made outside a request as ``system:kube-controller-manager``.

The HTTP answers are the same (a deleted Deployment answers the Status, a pod the Pod). Not matched: requests refused before their resource is known (401, unknown paths) are
not logged; no ``ResponseStarted`` stage for watches (a watch is logged once it ends), no ``responseObject`` for
lists and watches, no ``sourceIPs`` but 127.0.0.1, no annotations from admission or authorization; a write the
emulator's controllers make is logged as one request of its own, with the path a client would use; the namespace
controller's ``deletecollection`` is logged for the kinds that hold objects in the namespace only (a real one asks of
every kind); the binding's ``objectRef`` has no ``uid``; the Job controller's removal of its pods' finalizer is not
made (its pods have none).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator

from sktrace_emulator.records import Obj, ResourceType

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
CONTROLLER = "system:kube-controller-manager"
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
SCHEDULER = "system:kube-scheduler"
KUBELET = "system:node:"  # + the node's name


def controller(name: str) -> str:
    """The user a controller of kube-controller-manager writes as (its service account): ``replicaset-controller``…"""
    return f"system:serviceaccount:kube-system:{name}"
_WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class PolicyError(ValueError):
    """An audit policy the API server would refuse to start with."""


@dataclass(frozen=True)
class Rule:
    level: str
    verbs: frozenset[str] | None = None
    resources: tuple[tuple[str, frozenset[str]], ...] | None = None  # (group, names); None: every resource
    namespaces: frozenset[str] | None = None
    users: frozenset[str] | None = None
    omit_stages: frozenset[str] = frozenset()

    def matches(self, *, verb: str, group: str, resource: str, subresource: str, namespace: str, user: str) -> bool:
        if self.verbs is not None and verb not in self.verbs and "*" not in self.verbs:
            return False
        if self.users is not None and user not in self.users:
            return False
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        if self.resources is None:
            return True
        return any(g in (group, "*") and _names_match(names, resource, subresource) for g, names in self.resources)


def _names_match(names: frozenset[str], resource: str, subresource: str) -> bool:
    if not names:
        return True  # a group named without resources: every resource of it
    if not subresource:
        return resource in names or "*" in names
    return bool({f"{resource}/{subresource}", f"{resource}/*", f"*/{subresource}", "*"} & names)


@dataclass(frozen=True)
class Policy:
    """An ``audit.k8s.io/v1`` Policy: rules in order, the stages every rule omits."""

    rules: tuple[Rule, ...]
    omit_stages: frozenset[str] = frozenset()

    @classmethod
    def of(cls, doc: Any) -> Policy:
        """From the policy document (a dict as YAML or JSON gives it)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
            raise PolicyError("an audit policy is a mapping with a list of rules")
        return cls(tuple(_rule(r) for r in doc["rules"]), _stages(doc.get("omitStages")))

    @classmethod
    def at_level(cls, level: str) -> Policy:
        """Every request at one level, ``RequestReceived`` omitted (the common setting)."""
        return cls((Rule(level),), frozenset({"RequestReceived"}))

    def decide(self, *, verb: str, group: str, resource: str, subresource: str, namespace: str, user: str) -> tuple[str, frozenset[str]]:
        """The level of a request and the stages it omits; ``None`` when no rule matches."""
        for rule in self.rules:
            if rule.matches(verb=verb, group=group, resource=resource, subresource=subresource, namespace=namespace, user=user):
                return rule.level, self.omit_stages | rule.omit_stages
        return "None", self.omit_stages


def _stages(value: Any) -> frozenset[str]:
    stages = frozenset(value or ())
    if not stages <= set(STAGES):
        raise PolicyError(f"unknown stage in omitStages: {sorted(stages - set(STAGES))}")
    return stages


def _rule(doc: Any) -> Rule:
    if not isinstance(doc, dict) or doc.get("level") not in LEVELS:
        raise PolicyError(f"every rule needs a level, one of {', '.join(LEVELS)}: {doc!r}")
    resources = None
    if doc.get("resources") is not None:
        resources = tuple((str(r.get("group", "")), frozenset(r.get("resources") or ())) for r in doc["resources"])
    def names(key: str) -> frozenset[str] | None:
        return None if doc.get(key) is None else frozenset(doc[key])
    return Rule(doc["level"], names("verbs"), resources, names("namespaces"), names("users"), _stages(doc.get("omitStages")))


@dataclass
class Request:
    """One request as the audit log tells it, gathered while it is served."""

    verb: str
    uri: str
    user: str
    rtype: ResourceType
    namespace: str
    name: str
    subresource: str = ""
    user_agent: str = ""
    received: float = field(default_factory=time.time)
    request_object: Any = None
    own_added: bool = False  # a create's own object is the first one it adds (its name may be generated)


class AuditLog:
    """Writes the Events of a policy to a stream of JSON lines; thread-safe."""

    def __init__(self, out: IO[str], policy: Policy, *, clock: Callable[[], float] = time.time) -> None:
        self.out = out
        self.policy = policy
        self.clock = clock
        self._lock = threading.Lock()
        self._local = threading.local()

    # -- requests served over HTTP ------------------------------------------------------------------

    def begin(self, request: Request) -> None:
        """The handler serves ``request``: writes to its own object are its own, others are controllers'."""
        self._local.request = request
        level, omit = self._decide(request)
        if level != "None" and "RequestReceived" not in omit:
            self._write(self._event(request, level, "RequestReceived", stage_at=request.received))

    def end(self, request: Request, *, code: int, response: Any) -> None:
        """The request was answered ``code`` with ``response`` (a decoded body, or None)."""
        self._local.request = None
        level, omit = self._decide(request)
        if level != "None" and "ResponseComplete" not in omit:
            self._write(self._event(request, level, "ResponseComplete", code=code, response=response))

    def answered(self, request: Request, *, code: int, raw: bytes, gone: bool) -> None:
        """The handler's answer (its bytes as sent; a delete's object ``gone`` once removed), logged."""
        level, _ = self._decide(request)
        if level == "None":
            self._local.request = None
            return
        response: Any = None
        if raw and (level == "RequestResponse" or code >= 400 or request.verb == "delete"):
            try:
                response = json.loads(raw)
            except ValueError:
                response = None
        if gone and code < 400 and request.verb == "delete" and isinstance(response, dict) and response.get("kind") != "Status" \
                and request.rtype.kind != "Pod":
            response = deleted_status(request.rtype, response)
        self.end(request, code=code, response=response)

    # -- writes made by the emulator's controllers ---------------------------------------------------

    @contextlib.contextmanager
    def acting(self, user: str) -> Iterator[None]:
        """Writes stored meanwhile (on this thread) are ``user``'s requests of their own, even while a request is served:
        the garbage collector's cascade, a controller's reconcile, the kubelet's status writes and final deletes."""
        actors = self._actors()
        actors.append(user)
        try:
            yield
        finally:
            actors.pop()

    @contextlib.contextmanager
    def collecting(self, rtype: ResourceType, namespace: str, user: str, items: list[Obj]) -> Iterator[None]:
        """One ``deletecollection`` of ``rtype`` in ``namespace`` by ``user``, answered with the list ``items`` (the
        objects as they were before, as a real server answers): the deletions made meanwhile are its own, not lines."""
        previous = getattr(self._local, "collection", None)
        self._local.collection = (rtype, namespace, user)
        try:
            with self.acting(user):
                yield
        finally:
            self._local.collection = previous
        request = Request("deletecollection", _uri(rtype, namespace, "", ""), user, rtype, namespace, "", "", "kube-controller-manager",
                          self.clock(), {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal", "propagationPolicy": "Background"})
        listed = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": {}, "items": items}
        self._controller_request(request, 200, listed)

    @contextlib.contextmanager
    def serving_collection(self, rtype: ResourceType, namespace: str) -> Iterator[None]:
        """A client's ``deletecollection`` being served: its request is the one line (the handler writes it), the
        deletions it makes are not lines of their own."""
        previous = getattr(self._local, "collection", None)
        self._local.collection = (rtype, namespace, None)
        try:
            yield
        finally:
            self._local.collection = previous

    def _actors(self) -> list[str]:
        actors: list[str] | None = getattr(self._local, "actors", None)
        if actors is None:
            actors = self._local.actors = []
        return actors

    def committed(self, rtype: ResourceType, event_type: str, old: Obj | None, new: Obj) -> None:
        """A write stored outside a request's own object: logged as a controller's request of its own."""
        meta = new.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        actors = self._actors()
        if getattr(self._local, "collection", None) == (rtype, ns, actors[-1] if actors else None) \
                and (event_type == "DELETED" or _deletion_marked(old, new)):
            return  # part of the deletecollection being served
        if event_type == "DELETED" and rtype.kind == "Pod":
            return  # a pod's removal is the delete that set its grace period to 0 (a real server answers it with the Pod)
        current: Request | None = getattr(self._local, "request", None)
        if not actors and current is not None and _own(current, rtype, ns, name, event_type):
            current.own_added = current.own_added or event_type == "ADDED"
            return
        verb, subresource, response = _controller_write(rtype, event_type, old, new)
        user = actors[-1] if actors else GARBAGE_COLLECTOR if verb == "delete" and current is not None else CONTROLLER
        named = name if verb != "create" or subresource or not meta.get("generateName") else ""
        request = Request(verb, _uri(rtype, ns, "" if verb == "create" and not subresource else name, subresource), user, rtype,
                          ns if rtype.namespaced else "", named, subresource, "kube-controller-manager", self.clock())
        if verb in ("create", "update") and subresource != "binding":
            request.request_object = new  # a controller sends the object whole, a status update too
        elif verb == "create":
            request.request_object = {"kind": "Binding", "apiVersion": "v1", "metadata": {"name": name, "namespace": ns, "uid": meta.get("uid", "")},
                                      "target": {"kind": "Node", "name": (new.get("spec") or {}).get("nodeName", "")}}
        elif verb == "patch":  # a kubelet patches its pod's status (with the uid as a precondition)
            request.request_object = {"metadata": {"uid": meta.get("uid", "")}, "status": new.get("status") or {}}
        elif verb == "delete":
            grace = meta.get("deletionGracePeriodSeconds") if rtype.kind == "Pod" else None
            options: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal", "propagationPolicy": "Background"}
            request.request_object = options if grace is None else {**options, "gracePeriodSeconds": grace}
        self._controller_request(request, 201 if verb == "create" else 200, response)

    def _controller_request(self, request: Request, code: int, response: Obj) -> None:
        level, omit = self._decide(request)
        if level == "None":
            return
        if "RequestReceived" not in omit:
            self._write(self._event(request, level, "RequestReceived", stage_at=request.received))
        if "ResponseComplete" not in omit:
            self._write(self._event(request, level, "ResponseComplete", code=code, response=response))

    # -- the lines ----------------------------------------------------------------------------------

    def _decide(self, request: Request) -> tuple[str, frozenset[str]]:
        return self.policy.decide(verb=request.verb, group=request.rtype.group, resource=request.rtype.plural,
                                  subresource=request.subresource, namespace=request.namespace, user=request.user)

    def _event(self, request: Request, level: str, stage: str, *, code: int | None = None, response: Any = None,
               stage_at: float | None = None) -> Obj:
        rtype = request.rtype
        ref: Obj = {"resource": rtype.plural}
        if request.namespace:
            ref["namespace"] = request.namespace
        if request.name:
            ref["name"] = request.name
        sent = (request.request_object.get("metadata") if isinstance(request.request_object, dict) else None) or {}
        if request.verb == "update" and isinstance(sent, dict) and sent.get("uid"):  # measured: an update names its uid,
            ref["uid"] = sent["uid"]  # and the version it replaced; a create, patch or delete neither
        if rtype.group:
            ref["apiGroup"] = rtype.group
        ref["apiVersion"] = rtype.version
        if request.verb == "update" and isinstance(sent, dict) and sent.get("resourceVersion"):
            ref["resourceVersion"] = sent["resourceVersion"]
        if request.subresource:
            ref["subresource"] = request.subresource

        event: Obj = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": str(uuid.uuid4()), "stage": stage,
            "requestURI": request.uri, "verb": request.verb,
            "user": {"username": request.user, "groups": ["system:authenticated"]},
            "sourceIPs": ["127.0.0.1"], "userAgent": request.user_agent, "objectRef": ref,
        }
        if code is not None:
            status: Obj = {"metadata": {}, "code": code}
            if code >= 400 and isinstance(response, dict):
                status.update({k: response[k] for k in ("status", "message", "reason") if k in response})
            event["responseStatus"] = status
        bodies = level in ("Request", "RequestResponse")
        if bodies and request.request_object is not None and request.verb in _WRITES:
            event["requestObject"] = request.request_object
        if level == "RequestResponse" and response is not None and code is not None and request.verb not in ("list", "watch"):
            event["responseObject"] = response
        event["requestReceivedTimestamp"] = rfc3339_micro(request.received)
        event["stageTimestamp"] = rfc3339_micro(self.clock() if stage_at is None else stage_at)
        return event

    def _write(self, event: Obj) -> None:
        line = json.dumps(event, separators=(",", ":")) + "\n"
        with self._lock:
            if not self.out.closed:  # a request still served while the log was turned off
                self.out.write(line)
                self.out.flush()

    def close(self) -> None:
        with self._lock:
            self.out.close()


def rfc3339_micro(ts: float) -> str:
    """A time as the audit log writes it: RFC 3339, UTC, microseconds."""
    seconds, micro = divmod(round(ts * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}Z"


def named_in(body: Any, verb: str) -> str:
    """The name a create's body gives (a real server's ``objectRef.name``); '' for a generated name, known only after."""
    meta = body.get("metadata") if verb == "create" and isinstance(body, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def deleted_status(rtype: ResourceType, obj: Obj) -> Obj:
    """What a real server answers a delete that removed the object (a background deletion)."""
    meta = obj.get("metadata") or {}
    details = {"name": meta.get("name", ""), "group": rtype.group, "kind": rtype.plural, "uid": meta.get("uid", "")}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {k: v for k, v in details.items() if v}}


def _own(current: Request, rtype: ResourceType, ns: str, name: str, event_type: str) -> bool:
    """Whether a write is the served request's own (else a controller's, made meanwhile)."""
    if current.rtype != rtype or (rtype.namespaced and current.namespace != ns):
        return False
    return current.name == name or (current.verb == "create" and not current.own_added and event_type == "ADDED")


def _controller_write(rtype: ResourceType, event_type: str, old: Obj | None, new: Obj) -> tuple[str, str, Obj]:
    """The verb, subresource and answer of a controller's write that stored ``new`` (``old``: what it replaced)."""
    if event_type == "ADDED":
        return "create", "", new
    if event_type == "DELETED":
        return "delete", "", deleted_status(rtype, new)
    if _deletion_marked(old, new):
        return "delete", "", new  # a graceful deletion begins (or a pod's final one, grace 0): answered with the object
    if rtype.kind == "Pod" and old is not None and (new.get("spec") or {}).get("nodeName") and not (old.get("spec") or {}).get("nodeName"):
        return "create", "binding", {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    if old is not None and _only_status_changed(old, new):
        return ("patch" if rtype.kind == "Pod" else "update"), "status", new  # a kubelet patches its pods' status
    return "update", "", new


def _deletion_marked(old: Obj | None, new: Obj) -> bool:
    """Whether a write began a graceful deletion, or shortened one (a pod's final delete sets its grace period to 0)."""
    before, after = (old or {}).get("metadata") or {}, new.get("metadata") or {}
    if "deletionTimestamp" not in after or old is None:
        return False
    return "deletionTimestamp" not in before or after.get("deletionGracePeriodSeconds") != before.get("deletionGracePeriodSeconds")


def _only_status_changed(old: Obj, new: Obj) -> bool:
    def rest(obj: Obj) -> Obj:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
        return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}
    return rest(old) == rest(new) and old.get("status") != new.get("status")


def _uri(rtype: ResourceType, namespace: str, name: str, subresource: str) -> str:
    base = f"/api/{rtype.version}" if not rtype.group else f"/apis/{rtype.group}/{rtype.version}"
    path = f"{base}/namespaces/{namespace}/{rtype.plural}" if rtype.namespaced and namespace else f"{base}/{rtype.plural}"
    if name:
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}"
    return path
