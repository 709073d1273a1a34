"""How a status change is stored in ``status_changes.body`` (schema 0018): small, because a busy cluster writes one
for most of its pods' events.

A row holds its object's reduced status (``trace/statuses``) whole (``FULL``) or only what changed since the previous
row of the same ``status_objects`` row (``DELTA``, ``statuses.delta``: a field gone is a nil), packed in msgpack with
the words that every reduction repeats (its field names, the condition types, the states and reasons a kubelet and
the controllers write) as negative integers, their place in ``WORDS`` (one byte each for the first 32, two for the
next 96). No reduction holds a negative integer a person would read (counts and restarts are never below zero); one
that does is stored ``PLAIN``: msgpack as ``store/bodies`` packs a body, which is also how schema 0016 stored every
row (the migration keeps those bytes).

``WORDS`` only grows: a word's place, once shipped, names it for ever (a new word goes at the end).
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

from kubectl_sktrace.store.bodies import decode_body, encode_body
from kubectl_sktrace.trace.files.format import loads, object_packer

DELTA, FULL, PLAIN = 0, 1, 2
"""``status_changes.form``: a delta from the object's previous row, a whole reduction in words, a whole one as 0016
stored it."""

WORDS = (
    # a reduction's field names (trace/statuses)
    "phase", "node", "conditions", "containers", "ready", "restarts", "state", "last", "desired", "replicas",
    "readyReplicas", "availableReplicas", "updatedReplicas", "unavailableReplicas", "True", "False",
    "Running", "Pending", "Succeeded", "Failed", "Initialized", "Ready", "ContainersReady", "PodScheduled", "running",
    "Available", "Progressing", "Complete", "waiting ContainerCreating", "waiting CrashLoopBackOff",
    "waiting ImagePullBackOff", "terminated OOMKilled 137",
    # two bytes each from here
    "terminated Error 1", "terminated Completed 0", "active", "succeeded", "failed", "terminating", "reason",
    "currentReplicas", "fullyLabeledReplicas", "terminatingReplicas", "desiredNumberScheduled", "currentNumberScheduled",
    "numberReady", "numberAvailable", "numberUnavailable", "updatedNumberScheduled", "numberMisscheduled",
    "True MinimumReplicasAvailable", "False MinimumReplicasUnavailable", "True NewReplicaSetAvailable",
    "True ReplicaSetUpdated", "True NewReplicaSetCreated", "True FoundNewReplicaSet", "False ProgressDeadlineExceeded",
    "True CompletionsReached", "True BackoffLimitExceeded", "SuccessCriteriaMet", "FailureTarget", "Suspended",
    "ReplicaFailure", "DisruptionTarget", "Unknown", "False ContainersNotReady", "Evicted", "waiting PodInitializing",
    "waiting CreateContainerConfigError", "waiting ErrImageNeverPull", "waiting InvalidImageName", "terminated Error 2",
    "terminated Error 137", "terminated Error 143", "terminated Completed", "Ready True", "Ready False",
    "PodReadyToStartContainers", "False Unschedulable", "True PodCompleted", "False PodCompleted",
    "terminated ContainerStatusUnknown 137", "EtcdReady", "Established", "NamesAccepted", "Synced", "Healthy",
    "True Ready", "False NotReady", "True KubeletReady", "Degraded",
)
_CODE = {word: -(place + 1) for place, word in enumerate(WORDS)}


class _Negative(ValueError):
    """A reduction holds a negative integer: it cannot be said in words."""


def _words(value: Mapping[str, Any]) -> dict[Any, Any]:
    """A reduction (or a delta) with its words as their codes, a copy; ``_Negative`` when it holds a negative integer.
    Written for speed (every status change comes through here): the two levels a reduction has, inline."""
    out: dict[Any, Any] = {}
    for name, each in value.items():
        kind = type(each)
        if kind is str:
            each = _CODE.get(each, each)
        elif kind is dict:
            inner: dict[Any, Any] = {}
            for sub, one in each.items():
                sort = type(one)
                if sort is str:
                    one = _CODE.get(one, one)
                elif sort is dict:
                    one = _words(one)
                elif sort is int and one < 0:
                    raise _Negative(sub)
                inner[_CODE.get(sub, sub)] = one
            each = inner
        elif kind is int and each < 0:
            raise _Negative(name)
        out[_CODE.get(name, name)] = each
    return out


def _changed_words(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[Any, Any]:
    """``_words(statuses.delta(before, after))`` in one pass, without the delta in between."""
    out: dict[Any, Any] = {}
    for name, now in after.items():
        was = before.get(name)
        if was == now:
            continue
        kind = type(now)
        if kind is dict:
            now = _changed_words(was, now) if type(was) is dict else _words(now)
        elif kind is str:
            now = _CODE.get(now, now)
        elif kind is int and now < 0:
            raise _Negative(name)
        out[_CODE.get(name, name)] = now
    if before.keys() != after.keys():
        for name in before:
            if name not in after:
                out[_CODE.get(name, name)] = None
    return out


def _unwords(value: Any) -> Any:
    if type(value) is dict:
        return {_unwords(name): _unwords(each) for name, each in value.items()}
    if type(value) is int and value < 0:
        return WORDS[-value - 1]
    return value


_PACK = threading.local()


def _pack(value: Any) -> bytes:
    """msgpack bytes, from this thread's packer (made once: making one costs more than packing a delta)."""
    pack = getattr(_PACK, "pack", None)
    if pack is None:
        pack = _PACK.pack = object_packer()
    packed: bytes = pack(value)
    return packed


def encode(reduced: Mapping[str, Any], *, before: Mapping[str, Any] | None) -> tuple[int, bytes]:
    """``(form, body)`` of a row: a delta from ``before`` (the previous row's reduction) or, with none, the whole."""
    try:
        if before is None:
            return FULL, _pack(_words(reduced))
        return DELTA, _pack(_changed_words(before, reduced))
    except _Negative:
        return PLAIN, encode_body(reduced)[0]


def decode(form: int, body: bytes) -> dict[str, Any]:
    """A row's body back: the whole reduction (``FULL``, ``PLAIN``) or the delta (``DELTA``) it holds."""
    if form == PLAIN:
        return decode_body(body)
    decoded: dict[str, Any] = _unwords(loads(body))
    return decoded
