"""What a clean stop leaves for the next start (schema 0020): per live tracked object and live pod, the version the
recorder applied last and the bytes of its status's reduction then (docs/spec.md §5, "A restart that lists").

A row is ``(uid, run_id, resource_version, status)``: ``status`` is ``trace/statuses.packed`` of the reduction (what
the recorder compares the next status with). ``run_id`` is the run whose clean stop left it; the next start trusts the
rows of the run right before it only, and only when that run stopped cleanly (``record/unchanged`` says when else):
a run that crashed leaves none it trusts, and once a run began the rows of the one before describe only the state at
that stop. A clean stop carries the rows it trusted forward to itself (the objects the run never saw change are as
that stop left them), replaces those of the objects it saw change, and drops those of objects no longer live (not in
``objects``, no live row in ``pods``). ``meta`` 'stopped_versions.recorder' names the kubectl-sktrace that wrote
them: another one reduces statuses and derives lifecycles its own way, and lists everything as before.

Written once per clean stop, in one transaction; read once per start. ``cache copy`` copies the rows (with the runs and
the live rows they describe); a prune changes nothing they describe but the rows of finished pods it removes, which
the next start no longer finds live, so it does not use their rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from kubectl_sktrace.store.engine import Cache

STOPPED_VERSIONS = """
        CREATE TABLE stopped_versions (uid TEXT PRIMARY KEY, run_id INTEGER NOT NULL, resource_version TEXT NOT NULL,
                                       status BLOB NOT NULL) WITHOUT ROWID;"""
"""The migration 0020 (``schema.MIGRATIONS``)."""
PG_STOPPED_VERSIONS = """
        CREATE TABLE stopped_versions (uid TEXT COLLATE "C" PRIMARY KEY, run_id BIGINT NOT NULL,
                                       resource_version TEXT COLLATE "C" NOT NULL, status BYTEA NOT NULL);"""
"""Its PostgreSQL twin (``pgschema.PG_MIGRATIONS``)."""

RECORDER = "stopped_versions.recorder"
"""The ``meta`` key naming the kubectl-sktrace that wrote the rows."""


def load(cache: Cache, run_id: int) -> dict[str, tuple[str, bytes]]:
    """The rows run ``run_id``'s clean stop left: uid -> (resourceVersion, status bytes)."""
    if not cache.has_table("stopped_versions"):
        return {}
    rows = cache.conn.execute("SELECT uid, resource_version, status FROM stopped_versions WHERE run_id = ?", (run_id,)).fetchall()
    return {uid: (version, bytes(status)) for uid, version, status in rows}


def keep(cache: Cache, *, run_id: int, carried_from: int | None, rows: Iterable[tuple[str, str, bytes]], recorder: str) -> int:
    """Within a transaction, at run ``run_id``'s clean stop: the rows of ``carried_from`` (the run whose rows this one
    trusted; None: none) become this run's, ``rows`` (uid, resourceVersion, status bytes: the objects it saw change)
    replace theirs, every other row and those of objects no longer live go. Returns how many rows it wrote."""
    if carried_from is not None:
        cache.write("UPDATE stopped_versions SET run_id = ? WHERE run_id = ?", (run_id, carried_from))
    cache.write("DELETE FROM stopped_versions WHERE run_id <> ?", (run_id,))
    written = 0
    for uid, version, status in rows:
        cache.write("INSERT INTO stopped_versions (uid, run_id, resource_version, status) VALUES (?, ?, ?, ?) ON CONFLICT (uid) "
                    "DO UPDATE SET run_id = excluded.run_id, resource_version = excluded.resource_version, status = excluded.status",
                    (uid, run_id, version, status))
        written += 1
    cache.write("DELETE FROM stopped_versions WHERE uid NOT IN (SELECT uid FROM objects) "
                "AND uid NOT IN (SELECT uid FROM pods WHERE live = 1)")
    cache.set_meta(RECORDER, recorder)
    return written
