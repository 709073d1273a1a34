"""The registry of a PostgreSQL database's histories: which schema holds each one, the cluster it records and
every name it is known by.

``kubectl_sktrace.histories`` holds one row per history: its schema, its first name (the context it was first
recorded or copied from), and its cluster's identity (the ``kube-system`` namespace's uid, '' when it could not be
read, and the server). ``kubectl_sktrace.history_names`` holds every name of a history: the first one and the
aliases it gained when a recorder of the same cluster (the same uid) came under another context name, as the
in-cluster recorder (``in-cluster``, its server ``https://10.96.0.1:443``) continuing a laptop's history does.

A recorder finds its history by its cluster's uid first, then by its context name; a reader by any of its names.

The registry has migrations of its own (``REGISTRY_MIGRATIONS``), recorded in
``kubectl_sktrace.registry_migrations`` by number and name, each applied in one transaction under the schema
lock by the first writer that needs it; a registry made before that table existed holds the first migration and
is upgraded in place. Readers read the registry as they find it and never change it.
"""

from __future__ import annotations

import time
from typing import Any

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import CacheUrl, ClusterId
from kubectl_sktrace.store.pgschema import REGISTRY, REGISTRY_SCHEMA

R = REGISTRY_SCHEMA

REGISTRY_MIGRATIONS: list[tuple[str, str]] = [
    ("0001_histories", REGISTRY),
    (
        "0002_cluster_identity",
        f"""
        ALTER TABLE {R}.histories ADD COLUMN cluster_uid TEXT COLLATE "C" NOT NULL DEFAULT '',
                                  ADD COLUMN server TEXT COLLATE "C" NOT NULL DEFAULT '',
                                  ADD COLUMN scope_namespace TEXT COLLATE "C" NOT NULL DEFAULT '';
        CREATE INDEX histories_cluster_uid ON {R}.histories (cluster_uid) WHERE cluster_uid <> '';
        CREATE TABLE {R}.history_names (
            name TEXT COLLATE "C" PRIMARY KEY,
            history_id INTEGER NOT NULL REFERENCES {R}.histories (id) ON DELETE CASCADE,
            added DOUBLE PRECISION NOT NULL
        );
        INSERT INTO {R}.history_names (name, history_id, added) SELECT name, id, created FROM {R}.histories;
        DO $$
        DECLARE h record;
        BEGIN
            FOR h IN SELECT id, schema_name FROM {R}.histories LOOP
                IF to_regclass(format('%I.meta', h.schema_name)) IS NOT NULL THEN
                    EXECUTE format('UPDATE {R}.histories SET '
                                   'cluster_uid = coalesce((SELECT value FROM %1$I.meta WHERE key = ''cluster.uid''), ''''), '
                                   'server = coalesce((SELECT value FROM %1$I.meta WHERE key = ''cluster.server''), ''''), '
                                   'scope_namespace = coalesce((SELECT value FROM %1$I.meta WHERE key = ''scope.namespace''), '''') '
                                   'WHERE id = $1', h.schema_name) USING h.id;
                END IF;
            END LOOP;
        END $$;
        """,
    ),
]

_MIGRATIONS_TABLE = f"CREATE TABLE {R}.registry_migrations (number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)"


def _exists(raw: Any, table: str) -> bool:
    return raw.execute("SELECT to_regclass(%s)", (f"{R}.{table}",)).fetchone()[0] is not None


def registry_version(raw: Any, target: CacheUrl) -> int:
    """How many of ``REGISTRY_MIGRATIONS`` the database's registry has (0: none); a CacheError for a newer one,
    or one this version never made."""
    if not _exists(raw, "histories"):
        return 0
    if not _exists(raw, "registry_migrations"):
        return 1  # made before the registry had migrations of its own
    rows = [tuple(row) for row in raw.execute(f"SELECT number, name FROM {R}.registry_migrations ORDER BY number").fetchall()]
    known = [(number, name) for number, (name, _) in enumerate(REGISTRY_MIGRATIONS, start=1)]
    if len(rows) > len(known):
        raise CacheError(f"the registry of {target.masked} has version {len(rows)}, newer than this kubectl-sktrace knows "
                         f"({len(known)}); upgrade kubectl-sktrace (the database was left untouched)")
    if rows != known[: len(rows)]:
        raise CacheError(f"the registry of {target.masked} has migrations this kubectl-sktrace never made; it was left untouched")
    return len(rows)


def upgrade_registry(raw: Any, target: CacheUrl, *, lock: tuple[int, int]) -> None:
    """Apply the registry's missing migrations, each in one transaction holding the schema lock ``lock`` (the
    caller made sure the registry exists or may be created)."""
    if registry_version(raw, target) == len(REGISTRY_MIGRATIONS) and _exists(raw, "registry_migrations"):
        return
    for number, (name, ddl) in enumerate(REGISTRY_MIGRATIONS, start=1):
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", lock)
            version = registry_version(raw, target)
            if version >= number and _exists(raw, "registry_migrations"):
                continue  # applied, perhaps by another recorder meanwhile
            if version < number:
                raw.execute(ddl)
            if not _exists(raw, "registry_migrations"):
                raw.execute(_MIGRATIONS_TABLE)
            raw.execute(f"INSERT INTO {R}.registry_migrations (number, name, applied) VALUES (%s, %s, %s)", (number, name, time.time()))


def history_names(raw: Any, history_id: int) -> tuple[str, ...]:
    """Every name of a history: its first name, then its aliases in the order they came."""
    if not _exists(raw, "history_names"):
        return tuple(str(r[0]) for r in raw.execute(f"SELECT name FROM {R}.histories WHERE id = %s", (history_id,)).fetchall())
    rows = raw.execute(f"SELECT n.name FROM {R}.history_names n JOIN {R}.histories h ON h.id = n.history_id WHERE h.id = %s "
                       "ORDER BY n.name <> h.name, n.added, n.name", (history_id,)).fetchall()
    return tuple(str(r[0]) for r in rows)


def all_histories(raw: Any) -> list[tuple[int, str, str, tuple[str, ...]]]:
    """``(id, first name, schema, names)`` of every history, by first name."""
    if not _exists(raw, "history_names"):
        rows = raw.execute(f"SELECT id, name, schema_name, ARRAY[name] FROM {R}.histories ORDER BY name").fetchall()
    else:  # one query, however many histories the database holds
        rows = raw.execute(f"SELECT h.id, h.name, h.schema_name, array_agg(n.name ORDER BY n.name <> h.name, n.added, n.name) "
                           f"FROM {R}.histories h JOIN {R}.history_names n ON n.history_id = h.id GROUP BY h.id ORDER BY h.name").fetchall()
    return [(int(i), str(name), str(schema), tuple(str(n) for n in names)) for i, name, schema, names in rows]


def by_name(raw: Any, name: str) -> tuple[int, str] | None:
    """``(id, schema)`` of the history known by ``name`` (its first name or an alias)."""
    if _exists(raw, "history_names"):
        sql = f"SELECT h.id, h.schema_name FROM {R}.history_names n JOIN {R}.histories h ON h.id = n.history_id WHERE n.name = %s"
    else:
        sql = f"SELECT id, schema_name FROM {R}.histories WHERE name = %s"
    row = raw.execute(sql, (name,)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def by_cluster(raw: Any, target: CacheUrl, name: str, cluster: ClusterId) -> tuple[int, str] | None:
    """``(id, schema)`` of the history of the cluster whose kube-system uid is ``cluster.uid``, in the same scope:
    the only one, else the one named ``name``; None when no history records it. Several, none of them named so:
    a CacheError."""
    uid = cluster.uid
    rows = raw.execute(
        f"SELECT h.id, h.schema_name, EXISTS (SELECT 1 FROM {R}.history_names n WHERE n.history_id = h.id AND n.name = %s) "
        f"FROM {R}.histories h WHERE h.cluster_uid = %s AND h.scope_namespace = %s ORDER BY h.id", (name, uid, cluster.namespace)).fetchall()
    named = [row for row in rows if row[2]]
    if len(rows) == 1 or named:
        chosen = named[0] if named else rows[0]
        return int(chosen[0]), str(chosen[1])
    if rows:
        names = ", ".join(n for row in rows for n in history_names(raw, int(row[0])))
        raise CacheError(f"{target.masked} holds {len(rows)} histories of this cluster (kube-system uid {uid}: {names}); "
                         "pass --context with one of those names")
    return None


def add_alias(raw: Any, history_id: int, name: str) -> None:
    """``name`` becomes another name of the history, unless another history is known by it."""
    raw.execute(f"INSERT INTO {R}.history_names (name, history_id, added) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (name, history_id, time.time()))


def adopt_cluster(raw: Any, history_id: int, cluster: ClusterId) -> None:
    """A history registered without a uid (its cluster's kube-system was unreadable, or nothing recorded it yet)
    takes the cluster's identity."""
    raw.execute(f"UPDATE {R}.histories SET cluster_uid = %s, server = %s, scope_namespace = %s WHERE id = %s AND cluster_uid = ''",
                (cluster.uid, cluster.server, cluster.namespace, history_id))


def register(raw: Any, name: str, cluster: ClusterId | None) -> tuple[int, str]:
    """A new history named ``name``, of ``cluster``: its registry rows and its schema's name."""
    uid, server, scope = (cluster.uid, cluster.server, cluster.namespace) if cluster is not None else ("", "", "")
    history_id = int(raw.execute(
        f"INSERT INTO {R}.histories (name, schema_name, created, cluster_uid, server, scope_namespace) VALUES (%s, '', %s, %s, %s, %s) "
        "RETURNING id", (name, time.time(), uid, server, scope)).fetchone()[0])
    schema = f"sktrace_h{history_id}"
    raw.execute(f"UPDATE {R}.histories SET schema_name = %s WHERE id = %s", (schema, history_id))
    add_alias(raw, history_id, name)
    return history_id, schema
