"""The cache schema: ordered, named migrations. Append new ones; never edit one that shipped. Each has a
PostgreSQL twin of the same name in ``pgschema.PG_MIGRATIONS`` (a test pairs them): add both.

What the tables mean (times are Unix seconds as REAL unless said otherwise; spec hashes are SimKube's u64
stored as signed 64-bit integers, see ``connection.to_db_hash``):

meta            key/value: ``application`` ('kubectl-sktrace'), ``cluster.server``, ``cluster.uid`` (uid of
                the kube-system namespace, '' when unreadable), ``cluster.context``, ``scope.namespace``
                ('' = all namespaces). Written once by the first recorder; later recorders must match.
runs            one row per ``start``: ``started``; ``synced`` when every watched kind finished its initial
                list; ``stopped`` is a heartbeat, moved forward at every commit, so a crashed run still has
                an end within half a second of its last write; ``clean`` is 1 only after a clean stop;
                ``config`` is the normalized tracer config in force (YAML text); ``retain`` (0008) the run's
                ``start --retain`` in seconds, NULL when it prunes nothing (``record/retention.py``).
events          the history, append-only, in the order it was recorded (``id``). ``ts`` is the integer
                event second of SimKube; ``recv`` the precise receive time. ``op`` is 0 applied / 1 deleted.
                ``inferred`` is 1 for what a relist reconstructed (deleted or created while offline: the
                real time lies between the previous run's last sight and ``ts``). ``spec_hash`` of the
                applied spec; ``body`` the sanitized object without its status and ``status`` its status
                (NULL when none), both zlib-compressed msgpack (``bodies.py`` says why); deleted rows
                have neither (export writes the name-only stub). ``owner_chain`` is the resolved ancestor chain of an applied object, JSON
                ``[[gvk, namespace, name], ...]`` direct owners first, depth first; NULL when it has none.
objects         the live index of tracked objects: one row per object that currently exists as far as the
                recorder knows (deleted objects are removed). ``uid``, ``spec_hash`` of the last applied
                event. (0003 dropped ``resource_version``, ``created`` and ``last_seen``: written, never read;
                the watch positions are ``watch_state``'s.)
pods            every pod seen, one row per uid, ``id`` is the order pods were first recorded. Its
                lifecycle owner (``owner_gvk``, ``owner_namespace``, ``owner_name``; NULL when no tracked
                owner takes it), ``stable_hash`` of its stable spec, lifecycle ``start_ts``/``end_ts``
                (integer seconds, NULL = not started / not finished: Empty is never a lifecycle),
                ``end_inferred`` when the end is the relist time of a pod that vanished, ``live`` 1 while the
                pod exists in the cluster, ``first_seen`` when it was first recorded (an export leaves out a pod
                first seen after its window's end). (0003 dropped ``last_seen``: written, never read.)
owners          owner objects met while resolving pod owner chains (ReplicaSets, Jobs, ...), cached so
                that neither a restart nor export needs the cluster: their uid and direct ownerReferences
                as JSON ``[[gvk, name, uid], ...]``.
watch_state     the last resourceVersion seen per watched kind (reported by ``status``).
coverage_gaps   (0002) intervals of a run during which one kind was not watched although the run went on: from
                the watch's last proof of liveness (``since``) until it watched again (``until``; NULL while
                the outage lasts, and after a crash in one: the run's ``stopped`` ends it). ``cause`` is
                'API unreachable' (connection refused or reset, TLS, timeouts, 429, 5xx) or 'watch expired'
                (a 410: the watch fell behind the server's history, e.g. a stopped or sleeping process);
                ``detail`` the error met. Changes found after a gap are recorded ``inferred``. The cause
                'watch failed' marks a kind given up until the run's end: not an outage, a kind that run did
                not record (``history.unrecorded_kinds``). Since 0007 (see there) two more: 'forbidden', 'not served'.
discovery       cached discovery documents per group-version, JSON.

Indexes for the reconciliation report (``store/reconciliation.py``, 0004): ``events_uid`` finds an object's
earlier versions by identity (was an object found by a restart's relist created or changed while offline?),
``pods_end`` the pods whose lifecycle ended within an offline gap.

Kinds that come and go, permissions that change (0007, docs/coverage.md):

coverage_gaps   'forbidden' (a 403) is blind time like an outage, from the refusal until a list of the kind succeeds
                again (what it finds then is recorded ``inferred``); before 0007 such a row always lasted until its
                run's end, which the same reading gives. 'not served' (a 404, or a kind absent from discovery) is
                no blind time: no object of the kind could exist until it was served again (``history.unserved_spans``).
                An older kubectl-sktrace would read those rows as outages or as kinds given up for their run: 0007
                keeps it out (a newer schema is refused), and indexes the rows by cause, which ``status`` reads apart.

What keeps a cache of millions of events fast (0005), so that reading a window costs what the window and the
objects hold, not the length of the history:

events_object   the index ``(gvk, namespace, name, ts, id, recv, op)``: an object's last row before a time is
                one backward step in it (``history.last_row_per_object``), answered from the index alone.
event_objects   every ``(gvk, namespace, name)`` that has a row in ``events``, filled by a trigger on insert:
                the objects that query walks. Never shrinks (a prune keeps a row of every object it saw).
event_counts    rows of ``events`` per ``(gvk, namespace, op, inferred)``, kept exact by triggers on insert
                and delete (events are never updated): what ``status`` counts, without reading the history.
pods_live       the live pods (a partial index): with ``pods_end`` and ``pods_owner``, ``status`` counts pods
                from index ranges; the pods of a long history are nearly all finished.

What makes an export cost what its window holds (0006):

events.refs     of an applied row of a kind with pod templates: the ``(code, name)`` references of its templates
                (``trace/references.py``: ``distinct_references`` under its run's ``podSpecTemplatePaths``, status included), compact
                JSON ``[[code, name], ...]``, ``[]`` when none; NULL for other rows and rows written before 0006
                (export then decodes the body): SimKube's reference rules are checked without decoding bodies.
events.daemonset  of an applied row: 1 when an ownerReference names a DaemonSet (``sanitize.is_daemonset_owned``),
                else 0; NULL for other rows and rows written before 0006. Export's filters read it instead of the body.
event_objects.last_ts, last_id, last_op
                the object's last row in the history's order ``(ts, id)``, kept exact by triggers on insert (0005's,
                replaced: it adds the object or moves its last row, and touches ``last_op`` only when it changes, which
                spares its index most writes) and delete (a prune removes rows); ``event_objects_live`` indexes the objects whose last row applies
                them: the objects that exist at the end of the history.
events_late     the rows received 2 s or more after their second (a relist stamps what it finds with its start,
                or an offline creation with its creation time), by ``recv``: few.
                With these, the state at a time ``S`` as known at ``K`` is found among the objects alive at the end,
                those with a row since ``min(S, K - 2)`` and those with a late row received since ``K``; every other
                object's last row is before ``S``, known, and not applied (``history.last_row_per_object``).

What was pruned (0009, docs/coverage.md):

prunes          one row per way history was pruned (``source``: 'prune', the command, or 'retain', a recorder's
                ``--retain``): the latest ``cutoff`` (integer seconds: rows before it may be gone), when
                (``pruned_at``), and the events and pods removed in all (only prunes that removed something).
                The history before the highest cutoff is incomplete: export says so, ``status`` shows it.

What draws the rate of changes of a long history at once (0010):

event_rates     rows of ``events`` per ``(minute, gvk, op, inferred)``, ``minute`` being ``ts / 60``, kept exact by
                triggers on insert and delete as ``event_counts`` is (a minute whose count falls to 0 loses its row, so
                a prune or a retention shrinks it too).
event_rates_hourly  the same per ``hour`` (``ts / 3600``): what a long range sums (8 weeks are 1,344 hours).
                ``view`` reads a range's whole hours from ``event_rates_hourly``, the whole minutes at its edges from
                ``event_rates`` and the partial minutes from ``events`` (a few rows an hour, not every event).

What a person calls a change (0011, docs/spec.md "What a change is"; ``trace/revisions.py``):

events.op       3 and 4 are *revisions*: versions whose spec is the previous version's, 3 when the labels, annotations
                or owner references changed, 4 when a spec-less kind's data changed (its metadata may have too). Their
                ``spec_hash`` is their base's (the object's last row of op 0, which holds the spec), their ``body`` the
                sanitized object without ``spec`` and status (``revisions.with_spec`` makes it whole). An export keeps
                op 0 and 1 by default (SimKube's events), so that the history of spec changes reads as before; an
                older kubectl-sktrace would read a revision as a deletion or skip it: 0011 keeps it out.
objects.meta_hash, data_hash
                the fingerprints of the object's last recorded metadata and data (``revisions.metadata_hash``,
                ``data_hash``; NULL: not known, an object recorded before 0011, or data_hash of a kind with a spec):
                what a restart compares what it lists with.
event_objects.last_op
                reads 0 for an object whose last row is a revision (it exists), as the live index
                ``event_objects_live`` needs: the triggers of 0006, replaced.

How bodies are stored (0012, ``bodies.py``):

events.body, status  besides plain zlib (every row before 0012), zlib with the preset dictionary of
                ``vocabulary.py`` (its id in the zlib header, and in ``meta`` as 'bodies.dictionary'), or for a
                body of at most ``bodies.RAW_LIMIT`` bytes its msgpack bytes as they are. An older
                kubectl-sktrace could read neither: 0012 keeps it out.

What the API server's audit log filled in (0013, docs/coverage.md, ``kubectl sktrace backfill``):

audit_fills     one row per gap a log filled: the run whose start ended it, or in which a kind's outage was (``run_id``;
                ``gvk`` that kind, '' for the time between runs; ``partial`` 1: the time before that run, the cache's
                first, where a log alone does not know the objects that never changed), the gap
                (``since``, ``until``), the part of it the logs covered (``covered_since``, ``covered_until``), the
                ``levels`` met ('Metadata', 'RequestResponse', comma-separated), the rows written from the logs
                (``events``), the reconstructed rows they replaced (``replaced``) and the objects whose reconstruction
                the logs did not account for, kept (``kept``).
audit_rows      the ``events`` rows a log wrote (``event_id``), by fill: not inferred (their time is the API server's
                own), not live either; what ``status``, ``export`` and the view tell apart.

What the view reads from indexes alone (0014):

events_object   carries ``inferred`` last: an object's changes as the view draws them (time, operation, whether
                reconstructed) are read from the index alone, never from the rows' pages.
pods_owner      carries ``start_ts`` and ``end_ts``: a workload's pods in a range are counted in the index, only those drawn read.
created         (0015) per uid, the second of its ``creationTimestamp`` (which bodies lack: ``sanitize``), written at an
                object's first sight and at every list; ``get --at`` shows it. Unknown (never guessed) until then.
status_changes  (0016) what a person reads of an object's status, one row per change; (0018) only what changed (``store/statuses.py``).
watch_state     (0019) ``run``: the run that stored the position, once every kind had listed (what it found applied):
                the next run resumes its watch there, with no list (``record/resuming``); NULL (an older recorder) lists.
stopped_versions  (0020) per live tracked object and live pod, the resourceVersion applied last and its status's bytes, as
                a clean stop left them: a restart that lists does not walk an object listed at that version again
                (``store/stopped.py``, ``record/unchanged``)."""

from __future__ import annotations

from kubectl_sktrace.store.statuses import STATUS_CHANGES, STATUS_CHANGES_COMPACT
from kubectl_sktrace.store.stopped import STOPPED_VERSIONS

APPLICATION = "kubectl-sktrace"
APPLICATION_ID = 0x736B7472  # 'sktr', in the sqlite header: marks a file as one of our caches

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started REAL NOT NULL,
            synced REAL,
            stopped REAL NOT NULL,
            clean INTEGER NOT NULL DEFAULT 0,
            pid INTEGER NOT NULL,
            config TEXT NOT NULL
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ts INTEGER NOT NULL,
            recv REAL NOT NULL,
            run_id INTEGER NOT NULL,
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            uid TEXT NOT NULL,
            op INTEGER NOT NULL,
            inferred INTEGER NOT NULL DEFAULT 0,
            spec_hash INTEGER,
            owner_chain TEXT,
            body BLOB,
            status BLOB
        );
        CREATE INDEX events_ts ON events (ts);
        CREATE TABLE objects (
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            uid TEXT NOT NULL,
            spec_hash INTEGER NOT NULL,
            resource_version TEXT NOT NULL,
            created REAL,
            last_seen REAL NOT NULL,
            PRIMARY KEY (gvk, namespace, name)
        ) WITHOUT ROWID;
        CREATE TABLE pods (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            owner_gvk TEXT,
            owner_namespace TEXT,
            owner_name TEXT,
            stable_hash INTEGER,
            start_ts INTEGER,
            end_ts INTEGER,
            end_inferred INTEGER NOT NULL DEFAULT 0,
            live INTEGER NOT NULL DEFAULT 1,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL
        );
        CREATE INDEX pods_owner ON pods (owner_gvk, owner_namespace, owner_name);
        CREATE TABLE owners (
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            uid TEXT NOT NULL,
            owner_refs TEXT NOT NULL,
            fetched REAL NOT NULL,
            PRIMARY KEY (gvk, namespace, name)
        ) WITHOUT ROWID;
        CREATE TABLE watch_state (gvk TEXT PRIMARY KEY, resource_version TEXT NOT NULL, updated REAL NOT NULL);
        CREATE TABLE discovery (group_version TEXT PRIMARY KEY, body TEXT NOT NULL, fetched REAL NOT NULL);
        """,
    ),
    (
        "0002_coverage_gaps",
        """
        CREATE TABLE coverage_gaps (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL,
            gvk TEXT NOT NULL,
            since REAL NOT NULL,
            until REAL,
            cause TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        CREATE INDEX coverage_gaps_run ON coverage_gaps (run_id);
        """,
    ),
    (
        # sqlite's DROP COLUMN needs 3.35: the tables are rebuilt instead, rows and pod ids kept
        "0003_drop_unread_columns",
        """
        CREATE TABLE objects_0003 (
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            uid TEXT NOT NULL,
            spec_hash INTEGER NOT NULL,
            PRIMARY KEY (gvk, namespace, name)
        ) WITHOUT ROWID;
        INSERT INTO objects_0003 (gvk, namespace, name, uid, spec_hash) SELECT gvk, namespace, name, uid, spec_hash FROM objects;
        DROP TABLE objects;
        ALTER TABLE objects_0003 RENAME TO objects;
        CREATE TABLE pods_0003 (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            owner_gvk TEXT,
            owner_namespace TEXT,
            owner_name TEXT,
            stable_hash INTEGER,
            start_ts INTEGER,
            end_ts INTEGER,
            end_inferred INTEGER NOT NULL DEFAULT 0,
            live INTEGER NOT NULL DEFAULT 1,
            first_seen REAL NOT NULL
        );
        INSERT INTO pods_0003 (id, uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts,
                               end_inferred, live, first_seen)
            SELECT id, uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts,
                   end_inferred, live, first_seen FROM pods;
        DROP TABLE pods;
        ALTER TABLE pods_0003 RENAME TO pods;
        CREATE INDEX pods_owner ON pods (owner_gvk, owner_namespace, owner_name);
        """,
    ),
    (
        "0004_reconciliation_indexes",
        """
        CREATE INDEX events_uid ON events (uid);
        CREATE INDEX pods_end ON pods (end_ts);
        """,
    ),
    (
        "0005_history_at_scale",
        """
        CREATE INDEX events_object ON events (gvk, namespace, name, ts, id, recv, op);
        CREATE TABLE event_objects (
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            PRIMARY KEY (gvk, namespace, name)
        ) WITHOUT ROWID;
        INSERT INTO event_objects (gvk, namespace, name) SELECT DISTINCT gvk, namespace, name FROM events;
        CREATE TABLE event_counts (
            gvk TEXT NOT NULL,
            namespace TEXT NOT NULL,
            op INTEGER NOT NULL,
            inferred INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (gvk, namespace, op, inferred)
        ) WITHOUT ROWID;
        INSERT INTO event_counts (gvk, namespace, op, inferred, n)
            SELECT gvk, namespace, op, inferred, count(*) FROM events GROUP BY gvk, namespace, op, inferred;
        CREATE TRIGGER events_counted_insert AFTER INSERT ON events BEGIN
            INSERT OR IGNORE INTO event_objects (gvk, namespace, name) VALUES (new.gvk, new.namespace, new.name);
            INSERT INTO event_counts (gvk, namespace, op, inferred, n) VALUES (new.gvk, new.namespace, new.op, new.inferred, 1)
                ON CONFLICT (gvk, namespace, op, inferred) DO UPDATE SET n = n + 1;
        END;
        CREATE INDEX pods_live ON pods (live) WHERE live = 1;
        CREATE TRIGGER events_counted_delete AFTER DELETE ON events BEGIN
            UPDATE event_counts SET n = n - 1
                WHERE gvk = old.gvk AND namespace = old.namespace AND op = old.op AND inferred = old.inferred;
        END;
        """,
    ),
    (
        "0006_export_follows_the_window",
        """
        ALTER TABLE events ADD COLUMN refs TEXT;
        ALTER TABLE events ADD COLUMN daemonset INTEGER;
        ALTER TABLE event_objects ADD COLUMN last_ts INTEGER;
        ALTER TABLE event_objects ADD COLUMN last_id INTEGER;
        ALTER TABLE event_objects ADD COLUMN last_op INTEGER;
        UPDATE event_objects SET (last_ts, last_id, last_op) = (
            SELECT e.ts, e.id, e.op FROM events e
            WHERE e.gvk = event_objects.gvk AND e.namespace = event_objects.namespace AND e.name = event_objects.name
            ORDER BY e.ts DESC, e.id DESC LIMIT 1);
        CREATE INDEX event_objects_live ON event_objects (last_op) WHERE last_op = 0;
        CREATE INDEX events_late ON events (recv) WHERE recv >= ts + 2;
        DROP TRIGGER events_counted_insert;
        CREATE TRIGGER events_counted_insert AFTER INSERT ON events BEGIN
            INSERT INTO event_objects (gvk, namespace, name, last_ts, last_id, last_op) VALUES (new.gvk, new.namespace, new.name, new.ts, new.id, new.op)
                ON CONFLICT (gvk, namespace, name) DO UPDATE
                SET last_ts = excluded.last_ts, last_id = excluded.last_id
                WHERE event_objects.last_ts IS NULL OR event_objects.last_ts < excluded.last_ts
                   OR (event_objects.last_ts = excluded.last_ts AND event_objects.last_id < excluded.last_id);
            UPDATE event_objects SET last_op = new.op
                WHERE gvk = new.gvk AND namespace = new.namespace AND name = new.name AND last_id = new.id AND last_op IS NOT new.op;
            INSERT INTO event_counts (gvk, namespace, op, inferred, n) VALUES (new.gvk, new.namespace, new.op, new.inferred, 1)
                ON CONFLICT (gvk, namespace, op, inferred) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER events_last_delete AFTER DELETE ON events BEGIN
            UPDATE event_objects SET (last_ts, last_id, last_op) = (
                SELECT e.ts, e.id, e.op FROM events e
                WHERE e.gvk = old.gvk AND e.namespace = old.namespace AND e.name = old.name
                ORDER BY e.ts DESC, e.id DESC LIMIT 1)
            WHERE gvk = old.gvk AND namespace = old.namespace AND name = old.name AND last_id = old.id;
        END;
        """,
    ),
    (
        "0007_kinds_come_and_go",
        """
        CREATE INDEX coverage_gaps_cause ON coverage_gaps (cause, run_id);
        """,
    ),
    (
        "0008_run_retention",
        """
        ALTER TABLE runs ADD COLUMN retain REAL;
        """,
    ),
    (
        "0009_pruned_history",
        """
        CREATE TABLE prunes (
            source TEXT PRIMARY KEY,
            cutoff INTEGER NOT NULL,
            pruned_at REAL NOT NULL,
            events_removed INTEGER NOT NULL,
            pods_removed INTEGER NOT NULL
        );
        """,
    ),
    (
        "0010_event_rates",
        """
        CREATE TABLE event_rates (
            minute INTEGER NOT NULL,
            gvk TEXT NOT NULL,
            op INTEGER NOT NULL,
            inferred INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (minute, gvk, op, inferred)
        ) WITHOUT ROWID;
        CREATE TABLE event_rates_hourly (
            hour INTEGER NOT NULL,
            gvk TEXT NOT NULL,
            op INTEGER NOT NULL,
            inferred INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (hour, gvk, op, inferred)
        ) WITHOUT ROWID;
        INSERT INTO event_rates (minute, gvk, op, inferred, n)
            SELECT ts / 60, gvk, op, inferred, count(*) FROM events GROUP BY ts / 60, gvk, op, inferred;
        INSERT INTO event_rates_hourly (hour, gvk, op, inferred, n)
            SELECT minute / 60, gvk, op, inferred, sum(n) FROM event_rates GROUP BY minute / 60, gvk, op, inferred;
        CREATE TRIGGER events_rated_insert AFTER INSERT ON events BEGIN
            INSERT INTO event_rates (minute, gvk, op, inferred, n) VALUES (new.ts / 60, new.gvk, new.op, new.inferred, 1)
                ON CONFLICT (minute, gvk, op, inferred) DO UPDATE SET n = n + 1;
            INSERT INTO event_rates_hourly (hour, gvk, op, inferred, n) VALUES (new.ts / 3600, new.gvk, new.op, new.inferred, 1)
                ON CONFLICT (hour, gvk, op, inferred) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER events_rated_delete AFTER DELETE ON events BEGIN
            UPDATE event_rates SET n = n - 1
                WHERE minute = old.ts / 60 AND gvk = old.gvk AND op = old.op AND inferred = old.inferred;
            DELETE FROM event_rates
                WHERE minute = old.ts / 60 AND gvk = old.gvk AND op = old.op AND inferred = old.inferred AND n = 0;
            UPDATE event_rates_hourly SET n = n - 1
                WHERE hour = old.ts / 3600 AND gvk = old.gvk AND op = old.op AND inferred = old.inferred;
            DELETE FROM event_rates_hourly
                WHERE hour = old.ts / 3600 AND gvk = old.gvk AND op = old.op AND inferred = old.inferred AND n = 0;
        END;
        """,
    ),
    (
        "0011_revisions",
        """
        ALTER TABLE objects ADD COLUMN meta_hash INTEGER;
        ALTER TABLE objects ADD COLUMN data_hash INTEGER;
        DROP TRIGGER events_counted_insert;
        CREATE TRIGGER events_counted_insert AFTER INSERT ON events BEGIN
            INSERT INTO event_objects (gvk, namespace, name, last_ts, last_id, last_op)
                VALUES (new.gvk, new.namespace, new.name, new.ts, new.id, CASE WHEN new.op >= 3 THEN 0 ELSE new.op END)
                ON CONFLICT (gvk, namespace, name) DO UPDATE
                SET last_ts = excluded.last_ts, last_id = excluded.last_id
                WHERE event_objects.last_ts IS NULL OR event_objects.last_ts < excluded.last_ts
                   OR (event_objects.last_ts = excluded.last_ts AND event_objects.last_id < excluded.last_id);
            UPDATE event_objects SET last_op = CASE WHEN new.op >= 3 THEN 0 ELSE new.op END
                WHERE gvk = new.gvk AND namespace = new.namespace AND name = new.name AND last_id = new.id
                  AND last_op IS NOT (CASE WHEN new.op >= 3 THEN 0 ELSE new.op END);
            INSERT INTO event_counts (gvk, namespace, op, inferred, n) VALUES (new.gvk, new.namespace, new.op, new.inferred, 1)
                ON CONFLICT (gvk, namespace, op, inferred) DO UPDATE SET n = n + 1;
        END;
        DROP TRIGGER events_last_delete;
        CREATE TRIGGER events_last_delete AFTER DELETE ON events BEGIN
            UPDATE event_objects SET (last_ts, last_id, last_op) = (
                SELECT e.ts, e.id, CASE WHEN e.op >= 3 THEN 0 ELSE e.op END FROM events e
                WHERE e.gvk = old.gvk AND e.namespace = old.namespace AND e.name = old.name
                ORDER BY e.ts DESC, e.id DESC LIMIT 1)
            WHERE gvk = old.gvk AND namespace = old.namespace AND name = old.name AND last_id = old.id;
        END;
        """,
    ),
    (
        "0012_body_dictionary",
        """
        INSERT INTO meta (key, value) VALUES ('bodies.dictionary', '794192494');
        """,
    ),
    (
        "0013_audit_backfill",
        """
        CREATE TABLE audit_fills (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL,
            since REAL NOT NULL,
            until REAL NOT NULL,
            covered_since REAL,
            covered_until REAL,
            levels TEXT NOT NULL,
            events INTEGER NOT NULL,
            replaced INTEGER NOT NULL,
            kept INTEGER NOT NULL,
            partial INTEGER NOT NULL,
            filled_at REAL NOT NULL,
            gvk TEXT NOT NULL DEFAULT '',
            UNIQUE (run_id, partial, gvk, since)
        );
        CREATE TABLE audit_rows (event_id INTEGER PRIMARY KEY, fill_id INTEGER NOT NULL);
        CREATE INDEX audit_rows_fill ON audit_rows (fill_id);
        """,
    ),
    ("0014_view_indexes", """
        DROP INDEX events_object;
        CREATE INDEX events_object ON events (gvk, namespace, name, ts, id, recv, op, inferred);
        DROP INDEX pods_owner;
        CREATE INDEX pods_owner ON pods (owner_gvk, owner_namespace, owner_name, start_ts, end_ts);
        """),
    ("0015_creation_times", "CREATE TABLE created (uid TEXT PRIMARY KEY, ts INTEGER NOT NULL) WITHOUT ROWID;"),
    ("0016_status_changes", STATUS_CHANGES), ("0018_status_changes_compact", STATUS_CHANGES_COMPACT),
    ("0019_resume_positions", "ALTER TABLE watch_state ADD COLUMN run INTEGER;"), ("0020_stopped_versions", STOPPED_VERSIONS),
]

SCHEMA_VERSION = len(MIGRATIONS)
