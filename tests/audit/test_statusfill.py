"""What a gap's logged status writes mean (``audit/statusfill.walk``, ``audit/collect``): a scale write, answered with a
Scale, is a status change whose other fields are the state before it, even when the log shows nothing of the object
before it (a log that begins with the gap): the cache's state before the gap stands for it. Pure."""

from __future__ import annotations

from kubectl_sktrace.audit.collect import Collected, StatusLogged
from kubectl_sktrace.audit.lines import Logged
from kubectl_sktrace.audit.statusfill import walk
from kubectl_sktrace.model import GVK, ObjKey

WEB = ObjKey(GVK("apps", "v1", "Deployment"), "shop", "web")
BEFORE = {"desired": 2, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2,
          "conditions": {"Available": "True MinimumReplicasAvailable", "Progressing": "True NewReplicaSetAvailable"}}


def scale(at: float, replicas: int, uid: str = "u1") -> Logged:
    return Logged(at=at, audit_id=f"a{at}", verb="patch", key=WEB, uid=uid, level="RequestResponse", replicas=replicas, subresource="scale")


def test_a_scale_the_log_shows_nothing_before_is_laid_on_the_state_recorded_before_the_gap() -> None:
    collected = Collected()
    collected.add(scale(43.2, 3))
    logged = collected.statuses[WEB]
    assert [(s.reduced, s.scaled) for s in logged] == [({"desired": 3}, True)]
    changes = walk(StatusLogged(39.9, "u1", BEFORE), logged)
    assert [(c.at, c.reduced) for c in changes] == [(43.2, {**BEFORE, "desired": 3})]  # what a recorder that stayed up wrote


def test_a_scale_after_a_logged_write_is_that_write_s_state_with_its_replicas() -> None:
    collected = Collected()
    body = {"metadata": {"name": "web", "namespace": "shop", "uid": "u1"}, "spec": {"replicas": 2},
            "status": {"replicas": 2, "readyReplicas": 1}}
    collected.add(Logged(at=40.0, audit_id="b", verb="update", key=WEB, uid="u1", level="RequestResponse", body=body, subresource="status"))
    collected.add(scale(41.0, 5))
    assert [(s.reduced, s.scaled) for s in collected.statuses[WEB]] == [
        ({"desired": 2, "replicas": 2, "readyReplicas": 1}, False), ({"desired": 5, "replicas": 2, "readyReplicas": 1}, False)]


def test_a_scale_with_nothing_known_before_it_tells_nothing() -> None:
    only = [StatusLogged(43.0, "u1", {"desired": 3}, scaled=True)]
    assert walk(None, only) == []
    assert walk(StatusLogged(39.0, "other-uid", BEFORE), only) == []  # another object under the name
    assert walk(StatusLogged(39.0, "u1", {}), only) == []  # no status yet: no desired to tell
    again = [StatusLogged(43.0, "u1", {"desired": 2}, scaled=True)]
    assert walk(StatusLogged(39.0, "u1", BEFORE), again) == []  # the replicas it had: no change
