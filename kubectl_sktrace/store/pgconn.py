"""A PostgreSQL connection that runs the store's shared SQL: the only importer of psycopg 3, lazily, so that
``--help`` and sqlite users never load it.

``translate`` is the one place where the shared SQL is told apart: ``?`` and ``:name`` placeholders become
psycopg's ``%s`` and ``%(name)s`` (a literal ``%`` doubled), and sqlite's planner hints (``INDEXED BY …``)
are dropped, PostgreSQL's planner choosing the index itself.

Writes whose result nobody reads (``write``: every row the recorder appends or updates) are queued and sent
before the next read or the commit, so the order of statements, what a read sees and what a commit holds are
those of sqlite; only the round trips differ: a run of the same statement goes as one pipelined ``executemany``
(no round trip per row), and a run of plain inserts (the recorder's event rows) as one COPY, which fires the
statement triggers of ``pgschema`` once for the run. A connection runs in autocommit mode with explicit ``BEGIN`` … ``COMMIT``, as sqlite's does.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import CacheUrl

EXTRA_HINT = "pip install 'kubectl-sktrace[postgres]'"

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_HINT = re.compile(r"\s+INDEXED BY \w+", re.IGNORECASE)
_READS = re.compile(r"\s*(?:SELECT|WITH)\b", re.IGNORECASE)
STREAM_ROWS = 2000
_PLAIN_INSERT = re.compile(r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES \((?:%s, )*%s\)$")
COPY_ROWS = 8  # a run of plain inserts this long goes as one COPY: one statement (one trigger call) for them all


@functools.lru_cache(maxsize=512)
def translate(sql: str, *, with_params: bool) -> str:
    """The shared SQL as psycopg takes it."""
    sql = _HINT.sub("", sql)
    if not with_params:
        return sql
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%")).replace("?", "%s")


def psycopg_module() -> Any:
    """psycopg, or a one-line CacheError naming the extra that installs it."""
    try:
        import psycopg
    except ImportError:
        raise CacheError(f"a postgresql:// cache needs psycopg, which is not installed; {EXTRA_HINT}") from None
    return psycopg


class PgConnection:
    """The ``engine.DbConnection`` of a PostgreSQL cache (see the module docstring)."""

    def __init__(self, raw: Any, *, streaming: bool = False) -> None:
        self.raw = raw
        self.streaming = streaming
        self._pending: list[tuple[str, Any]] = []
        self._pq = psycopg_module().pq
        self._cursors = 0

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        """Run one statement now (the queued writes first). A reader's queries stream their rows from a server-side
        cursor, so an export of millions of rows holds a page of them at a time, as sqlite's cursors do."""
        self.flush()
        params = parameters if parameters else None
        query = translate(sql, with_params=params is not None)
        if self.streaming and _READS.match(sql):
            self._cursors += 1
            cursor = self.raw.cursor(name=f"sktrace_{self._cursors}")
            cursor.itersize = STREAM_ROWS
            return cursor.execute(query, params)
        return self.raw.execute(query, params)

    def queue(self, sql: str, parameters: Any) -> None:
        self._pending.append((translate(sql, with_params=True), parameters))

    def flush(self) -> None:
        """Send the queued writes, in order, in one pipeline."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        groups: list[tuple[str, list[Any]]] = []
        for sql, params in pending:
            if groups and groups[-1][0] == sql:
                groups[-1][1].append(params)
            else:
                groups.append((sql, [params]))
        with self.raw.cursor() as cursor:
            for sql, rows in groups:
                plain = _PLAIN_INSERT.match(sql)
                if plain is not None and len(rows) >= COPY_ROWS:
                    with cursor.copy(f"COPY {plain[1]} ({plain[2]}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
                else:
                    with self.raw.pipeline():
                        cursor.executemany(sql, rows)

    def discard(self) -> None:
        self._pending.clear()

    @property
    def in_transaction(self) -> bool:
        return bool(self._pending) or self.raw.info.transaction_status != self._pq.TransactionStatus.IDLE

    def close(self) -> None:
        self._pending.clear()
        self.raw.close()


def connect(target: CacheUrl, *, application: str) -> Any:
    """A psycopg connection in autocommit mode, or a one-line CacheError that never shows the password."""
    psycopg = psycopg_module()
    try:
        return psycopg.connect(target.url, autocommit=True, application_name=application, connect_timeout=10)
    except psycopg.Error as exc:
        raise CacheError(f"cannot connect to {target.masked} ({reason(exc, target)}); "
                         "check the URL, that the server runs and the user's password") from None
    except Exception as exc:  # a URL libpq cannot parse: ProgrammingError, or ValueError from the query part
        raise CacheError(f"cannot use --cache {target.masked} ({reason(exc, target)}); "
                         "pass postgresql://user@host:port/database") from None


def reason(exc: BaseException, target: CacheUrl) -> str:
    """What libpq or the server said (its first line, without the connection's preamble), with anything of the
    URL's credentials masked."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"^(?:connection failed: )?(?:connection to server (?:at|on) .*? failed: )?(?:FATAL:\s+)?", "", text) or text
    for secret in _secrets(target.url):
        text = text.replace(secret, "****")
    return text


def _secrets(url: str) -> list[str]:
    found = re.findall(r"^[^:/?#]+://[^:/?#@]*:([^/?#]*)@", url)
    found += re.findall(r"[?&]password=([^&#]*)", url, re.IGNORECASE)
    return [s for s in found if s]
