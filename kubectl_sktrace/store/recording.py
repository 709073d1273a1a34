"""Typed writes and start-up loads for the recorder, over ``connection.Cache``.

The recorder is the single writer: it opens a transaction with ``batch()``, calls these methods for every
row it changes, and commits at least twice a second. Nothing here commits on its own except the run
bookkeeping that must be durable by itself (``begin_run``, ``check_identity``, ``stop_run``).

Columns follow the schema docstring in ``schema.py`` exactly: hashes go through ``to_db_hash``, event bodies
are encoded by ``bodies.encode_body``, owner chains and owner references are JSON lists. Memory: the loads return only keys, uids, hashes and lifecycles — never object
bodies — so the recorder's memory follows the live cluster, not the length of the history.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import GVK, LiveObject, ObjKey, OwnerRef
from kubectl_sktrace.store.bodies import chain_to_json, encode_body, refs_to_json
from kubectl_sktrace.store.connection import from_db_hash, to_db_hash
from kubectl_sktrace.store import statusforms
from kubectl_sktrace.store.engine import Cache, DbConnection
from kubectl_sktrace.store.versions import OP_OF_CHANGE as OP_OF_CHANGE

OP_APPLIED = 0
OP_DELETED = 1
OP_UNTRACKED = 2  # the object leaves the history here (its kind stopped being tracked), without being deleted
# ops 3 and 4 are revisions (0011): ``versions.OP_OF_CHANGE``

_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@dataclass(frozen=True)
class Identity:
    """Which cluster and scope a cache records: checked on every start."""

    server: str
    cluster_uid: str
    context: str
    namespace: str  # '' = all namespaces


@dataclass(frozen=True)
class LivePod:
    """A live pod's lifecycle as the recorder keeps it in memory (``None`` = not started / not finished)."""

    uid: str
    namespace: str
    name: str
    start_ts: int | None
    end_ts: int | None
    owner_gvk: GVK | None = None


@dataclass(frozen=True)
class OwnerRecord:
    """An owner object met on a pod's owner chain: its uid and direct owner references."""

    uid: str
    refs: tuple[OwnerRef, ...]


@dataclass(frozen=True)
class EventRow:
    ts: int
    recv: float
    key: ObjKey
    uid: str
    op: int
    inferred: bool = False
    spec_hash: int | None = None
    owner_chain: tuple[ObjKey, ...] | None = None
    body: Mapping[str, Any] | None = None
    refs: tuple[tuple[str, str], ...] | None = None  # (code, name) of its pod templates' references; None: a kind without templates
    daemonset: bool | None = None  # whether an ownerReference names a DaemonSet (applied rows)


@dataclass(frozen=True)
class PreviousRun:
    id: int
    started: float
    stopped: float
    clean: bool


class Recording:
    """The recorder's view of one open cache."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._conn: DbConnection = cache.conn
        self._write = cache.write
        self._status_objects: dict[tuple[ObjKey, str], int] = {}  # ``append_status``'s objects
        self._statuses: list[tuple[Any, ...]] = []  # the batch's status changes, written as one before its commit

    # -- transactions -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` … ``COMMIT`` holding every write made inside it."""
        self._statuses.clear()
        with self.cache.transaction():
            yield
            self._write_statuses()

    def begin(self) -> None:
        """Open a batch by hand (the recorder's loop commits with ``commit``)."""
        self._statuses.clear()
        self.cache.begin()

    def commit(self) -> None:
        self._write_statuses()
        self.cache.commit()

    def rollback(self) -> None:
        self._statuses.clear()
        self.cache.rollback()

    def _write_statuses(self) -> None:
        """The batch's status changes, as one write: a busy cluster's kubelets make most of its events one."""
        if self._statuses:
            rows, self._statuses = self._statuses, []
            self.cache.write_many(_INSERT_STATUS, rows)

    @property
    def in_batch(self) -> bool:
        return self._conn.in_transaction

    # -- identity and runs --------------------------------------------------------------------------

    def check_identity(self, identity: Identity) -> None:
        """Store the identity on first use; afterwards refuse another cluster or scope. A cache that holds no
        history yet (no run ever synced, nothing recorded: every list was refused, say) takes the new scope."""
        with self.batch():
            stored = {k: self.cache.get_meta(k) for k in ("cluster.server", "cluster.uid", "scope.namespace")}
            if stored["cluster.server"] is None:
                self.cache.set_meta("cluster.server", identity.server)
                self.cache.set_meta("cluster.uid", identity.cluster_uid)
                self.cache.set_meta("cluster.context", identity.context)
                self.cache.set_meta("scope.namespace", identity.namespace)
                return
            where = f"cache {self.cache.path}"
            if stored["cluster.uid"] and identity.cluster_uid and stored["cluster.uid"] != identity.cluster_uid:
                raise CacheError(
                    f"{where} was recorded from another cluster (kube-system uid {stored['cluster.uid']}, this one is "
                    f"{identity.cluster_uid}); record this cluster into {self.cache.elsewhere}"
                )
            if stored["cluster.server"] != identity.server and not (stored["cluster.uid"] and stored["cluster.uid"] == identity.cluster_uid):
                raise CacheError(
                    f"{where} was recorded from another cluster ({stored['cluster.server']}, this one is {identity.server}); "
                    f"record this cluster into {self.cache.elsewhere}"
                )
            if (stored["scope.namespace"] or "") != identity.namespace:
                def scope(ns: str) -> str:
                    return f"namespace {ns!r}" if ns else "all namespaces"
                if self._holds_history():
                    raise CacheError(
                        f"{where} records {scope(stored['scope.namespace'] or '')}, not {scope(identity.namespace)}; "
                        f"record this scope into {self.cache.elsewhere}"
                    )
                self.cache.set_meta("scope.namespace", identity.namespace)
            if not stored["cluster.uid"] and identity.cluster_uid:
                self.cache.set_meta("cluster.uid", identity.cluster_uid)
            self.cache.set_meta("cluster.context", identity.context)

    def previous_config(self) -> str | None:
        """The tracer config (YAML) of the latest run, if any."""
        row = self._conn.execute("SELECT config FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def untrack(self, run_id: int, gvk: GVK, *, ts: float) -> int:
        """Within a batch: every live object of ``gvk`` leaves the history at ``ts`` (an ``OP_UNTRACKED`` row
        each) and the live index; nothing recorded before is touched. Returns how many objects."""
        count = self._conn.execute(
            "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred) "
            f"SELECT ?, ?, ?, gvk, namespace, name, uid, {OP_UNTRACKED}, 0 FROM objects WHERE gvk = ? ORDER BY namespace, name",
            (int(ts), ts, run_id, str(gvk)),
        ).rowcount
        self._write("DELETE FROM objects WHERE gvk = ?", (str(gvk),))
        return int(count)

    def _holds_history(self) -> bool:
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE synced IS NOT NULL) OR EXISTS (SELECT 1 FROM events) "
            "OR EXISTS (SELECT 1 FROM objects) OR EXISTS (SELECT 1 FROM pods)"
        ).fetchone()
        return bool(row[0])

    def previous_run(self) -> PreviousRun | None:
        row = self._conn.execute("SELECT id, started, stopped, clean FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else PreviousRun(row[0], row[1], row[2], bool(row[3]))

    def begin_run(self, *, started: float, pid: int, config_yaml: str, retain: float | None = None) -> int:
        """A new run; ``retain``: its ``--retain`` in seconds (schema 0008), for ``status``."""
        with self.batch():
            row = self._conn.execute(
                "INSERT INTO runs (started, synced, stopped, clean, pid, config, retain) VALUES (?, NULL, ?, 0, ?, ?, ?) RETURNING id",
                (started, started, pid, config_yaml, retain),
            ).fetchone()
        return int(row[0])

    def heartbeat(self, run_id: int, ts: float) -> None:
        """Within a batch: move the run's ``stopped`` forward so a crash still leaves an end."""
        self._write("UPDATE runs SET stopped = ? WHERE id = ?", (ts, run_id))

    def mark_synced(self, run_id: int, ts: float) -> None:
        """Within a batch."""
        self._write("UPDATE runs SET synced = ? WHERE id = ?", (ts, run_id))

    def stop_run(self, run_id: int, ts: float, *, clean: bool) -> None:
        """The run's end; a coverage gap still open (an outage the run did not outlive) ends with it."""
        with self.batch():
            self._write("UPDATE runs SET stopped = ?, clean = ? WHERE id = ?", (ts, int(clean), run_id))
            self._write("UPDATE coverage_gaps SET until = CASE WHEN since > ? THEN since ELSE ? END WHERE run_id = ? AND until IS NULL",
                        (ts, ts, run_id))

    def open_gap(self, run_id: int, gvk: GVK, *, since: float, cause: str, detail: str) -> int:
        """Within a batch: a kind stopped being watched at ``since``; returns the gap's id for ``close_gap``."""
        row = self._conn.execute(
            "INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, NULL, ?, ?) RETURNING id",
            (run_id, str(gvk), since, cause, detail),
        ).fetchone()
        return int(row[0])

    def close_gap(self, gap_id: int, *, until: float) -> None:
        """Within a batch: the kind is watched again."""
        self._write("UPDATE coverage_gaps SET until = ? WHERE id = ?", (until, gap_id))

    def set_gap_detail(self, gap_id: int, detail: str) -> None:
        """Within a batch: why an open gap lasts, now (a kind not yet observed because it is throttled)."""
        self._write("UPDATE coverage_gaps SET detail = ? WHERE id = ?", (detail, gap_id))

    def drop_gap(self, gap_id: int) -> None:
        """Within a batch: a gap too short to keep (a kind's first list within a second)."""
        self._write("DELETE FROM coverage_gaps WHERE id = ?", (gap_id,))

    # -- loads at start -----------------------------------------------------------------------------

    def load_live_objects(self) -> dict[ObjKey, LiveObject]:
        out: dict[ObjKey, LiveObject] = {}
        gvks: dict[str, GVK] = {}
        sql = "SELECT gvk, namespace, name, uid, spec_hash, meta_hash, data_hash FROM objects"
        for gvk_text, ns, name, uid, spec_hash, meta_hash, data_hash in self._conn.execute(sql):
            gvk = gvks.get(gvk_text) or gvks.setdefault(gvk_text, GVK.parse(gvk_text))
            out[ObjKey(gvk, ns, name)] = LiveObject(uid, from_db_hash(spec_hash), _hash(meta_hash), _hash(data_hash))
        return out

    def load_live_pods(self) -> dict[str, LivePod]:
        return {
            uid: LivePod(uid, ns, name, start, end, None if owner is None else GVK.parse(owner))
            for uid, ns, name, start, end, owner in self._conn.execute(
                "SELECT uid, namespace, name, start_ts, end_ts, owner_gvk FROM pods WHERE live = 1"
            )
        }

    def load_owners(self) -> dict[ObjKey, OwnerRecord]:
        out: dict[ObjKey, OwnerRecord] = {}
        for gvk_text, ns, name, uid, refs in self._conn.execute("SELECT gvk, namespace, name, uid, owner_refs FROM owners"):
            out[ObjKey(GVK.parse(gvk_text), ns, name)] = OwnerRecord(uid, _refs_from_json(refs))
        return out

    def load_owner(self, key: ObjKey) -> OwnerRecord | None:
        row = self._conn.execute(
            "SELECT uid, owner_refs FROM owners WHERE gvk = ? AND namespace = ? AND name = ?", (str(key.gvk), key.namespace, key.name)
        ).fetchone()
        return None if row is None else OwnerRecord(row[0], _refs_from_json(row[1]))

    def load_discovery(self) -> dict[str, Any]:
        return {gv: json.loads(body) for gv, body in self._conn.execute("SELECT group_version, body FROM discovery")}

    # -- writes (within a batch) --------------------------------------------------------------------

    def append_event(self, run_id: int, row: EventRow) -> None:
        body, status = (None, None) if row.body is None else encode_body(row.body)
        self._write(
            "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred, spec_hash, owner_chain, body, status, refs, "
            "daemonset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.ts, row.recv, run_id, str(row.key.gvk), row.key.namespace, row.key.name, row.uid, row.op, int(row.inferred),
                None if row.spec_hash is None else to_db_hash(row.spec_hash),
                None if not row.owner_chain else chain_to_json(row.owner_chain),
                body, status, None if row.refs is None else refs_to_json(row.refs), None if row.daemonset is None else int(row.daemonset),
            ),
        )

    def next_status_object(self) -> int:
        """The id the next ``status_objects`` row takes (the writer names its rows: it reads none back)."""
        return int(self._conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM status_objects").fetchone()[0])

    def add_status_object(self, object_id: int, key: ObjKey, uid: str) -> None:
        """An object whose status changes follow, named once (schema 0018)."""
        self._write("INSERT INTO status_objects (id, gvk, namespace, name, uid) VALUES (?, ?, ?, ?, ?)",
                    (object_id, str(key.gvk), key.namespace, key.name, uid))

    def append_status(self, run_id: int, *, ts: int, recv: float, key: ObjKey, uid: str, inferred: bool, reduced: Mapping[str, Any]) -> None:
        """A status change of ``key`` whole (its object named on its first change through this ``Recording``): for a
        writer of a few rows; the recorder names its objects and writes what changed (``append_status_change``)."""
        object_id = self._status_objects.get((key, uid))
        if object_id is None:
            object_id = self._status_objects[(key, uid)] = self.next_status_object()
            self.add_status_object(object_id, key, uid)
        self._write(_INSERT_STATUS, _status_row(run_id, ts=ts, recv=recv, object_id=object_id, inferred=inferred, reduced=reduced,
                                                before=None))

    def append_status_change(self, run_id: int, *, ts: int, recv: float, object_id: int, inferred: bool, reduced: Mapping[str, Any],
                             before: Mapping[str, Any] | None) -> None:
        """A status change (``trace/statuses``) of ``object_id``: what changed since ``before`` (its previous row's
        reduction), or whole when None (``store/statusforms``); held until the batch commits, then written with the
        batch's others as one (nothing in a recorder reads them back before)."""
        self._statuses.append(_status_row(run_id, ts=ts, recv=recv, object_id=object_id, inferred=inferred, reduced=reduced, before=before))

    def upsert_object(self, key: ObjKey, *, uid: str, spec_hash: int, meta_hash: int | None = None, data_hash: int | None = None) -> None:
        """The live index's row: uid, spec hash and the fingerprints of metadata and data (``trace/revisions``)."""
        self._write(
            "INSERT INTO objects (gvk, namespace, name, uid, spec_hash, meta_hash, data_hash) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (gvk, namespace, name) DO UPDATE SET uid = excluded.uid, spec_hash = excluded.spec_hash, "
            "meta_hash = excluded.meta_hash, data_hash = excluded.data_hash",
            (str(key.gvk), key.namespace, key.name, uid, to_db_hash(spec_hash), _db_hash(meta_hash), _db_hash(data_hash)),
        )

    def record_created(self, uid: str, created: float) -> None:
        """An object's creation second, as the cluster gave it (schema 0015); the first one recorded stands."""
        self._write("INSERT INTO created (uid, ts) VALUES (?, ?) ON CONFLICT (uid) DO NOTHING", (uid, math.floor(created)))

    def delete_object(self, key: ObjKey) -> None:
        self._write("DELETE FROM objects WHERE gvk = ? AND namespace = ? AND name = ?", (str(key.gvk), key.namespace, key.name))

    def insert_pod(
        self, *, uid: str, namespace: str, name: str, owner: ObjKey | None, stable_hash: int | None,
        start_ts: int | None, end_ts: int | None, first_seen: float,
    ) -> None:
        self._write(
            "INSERT INTO pods (uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, "
            "end_inferred, live, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?) "
            "ON CONFLICT (uid) DO UPDATE SET start_ts = excluded.start_ts, end_ts = excluded.end_ts, live = 1",
            (
                uid, namespace, name,
                None if owner is None else str(owner.gvk), None if owner is None else owner.namespace, None if owner is None else owner.name,
                None if stable_hash is None else to_db_hash(stable_hash), start_ts, end_ts, first_seen,
            ),
        )

    def update_pod(self, uid: str, *, start_ts: int | None, end_ts: int | None, end_inferred: bool, live: bool) -> None:
        self._write(
            "UPDATE pods SET start_ts = ?, end_ts = ?, end_inferred = ?, live = ? WHERE uid = ?",
            (start_ts, end_ts, int(end_inferred), int(live), uid),
        )

    def set_pod_owner(self, uid: str, *, owner: ObjKey, stable_hash: int) -> None:
        """The lifecycle owner of a pod inserted before it could be resolved."""
        self._write(
            "UPDATE pods SET owner_gvk = ?, owner_namespace = ?, owner_name = ?, stable_hash = ? WHERE uid = ?",
            (str(owner.gvk), owner.namespace, owner.name, to_db_hash(stable_hash), uid),
        )

    def upsert_owner(self, key: ObjKey, record: OwnerRecord, *, fetched: float) -> None:
        self._write(
            "INSERT INTO owners (gvk, namespace, name, uid, owner_refs, fetched) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (gvk, namespace, name) DO UPDATE SET uid = excluded.uid, owner_refs = excluded.owner_refs, fetched = excluded.fetched",
            (str(key.gvk), key.namespace, key.name, record.uid, _DUMPS([[str(r.gvk), r.name, r.uid] for r in record.refs]), fetched),
        )

    def set_watch_state(self, gvk: GVK, resource_version: str, ts: float, *, run_id: int | None = None) -> None:
        """The kind's watch position; ``run_id``: that run applied everything up to it (the next run may resume there)."""
        self._write(
            "INSERT INTO watch_state (gvk, resource_version, updated, run) VALUES (?, ?, ?, ?) ON CONFLICT (gvk) DO UPDATE "
            "SET resource_version = excluded.resource_version, updated = excluded.updated, run = excluded.run",
            (str(gvk), resource_version, ts, run_id),
        )

    def unmark_watch_state(self, gvk: GVK) -> None:
        """The kind's position is no longer one to resume from (the kind is refused or not served): the next run lists."""
        self._write("UPDATE watch_state SET run = NULL WHERE gvk = ?", (str(gvk),))

    def resume_positions(self, run_id: int) -> dict[GVK, str]:
        """The watch positions run ``run_id`` stored as fully applied (``set_watch_state``'s ``run_id``), by kind."""
        rows = self._conn.execute("SELECT gvk, resource_version FROM watch_state WHERE run = ?", (run_id,)).fetchall()
        return {GVK.parse(gvk): rv for gvk, rv in rows}

    def save_discovery(self, docs: Mapping[str, Any], *, fetched: float) -> None:
        with self.batch():
            for gv, body in docs.items():
                self._write(
                    "INSERT INTO discovery (group_version, body, fetched) VALUES (?, ?, ?) "
                    "ON CONFLICT (group_version) DO UPDATE SET body = excluded.body, fetched = excluded.fetched",
                    (gv, _DUMPS(body), fetched),
                )


_INSERT_STATUS = "INSERT INTO status_changes (object, ts, late, run_id, inferred, form, body) VALUES (?, ?, ?, ?, ?, ?, ?)"


def _status_row(run_id: int, *, ts: int, recv: float, object_id: int, inferred: bool, reduced: Mapping[str, Any],
                before: Mapping[str, Any] | None) -> tuple[Any, ...]:
    form, body = statusforms.encode(reduced, before=before)
    return (object_id, ts, round((recv - ts) * 1000), run_id, int(inferred), form, body)


def _hash(value: int | None) -> int | None:
    return None if value is None else from_db_hash(value)


def _db_hash(value: int | None) -> int | None:
    return None if value is None else to_db_hash(value)


def _refs_from_json(text: str) -> tuple[OwnerRef, ...]:
    return tuple(OwnerRef(GVK.parse(g), n, u) for g, n, u in json.loads(text))
