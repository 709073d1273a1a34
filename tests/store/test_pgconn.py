"""store.pgconn: the shared SQL as psycopg takes it, and a server's error without the URL's secrets."""

from __future__ import annotations

import pytest

from kubectl_sktrace.model import CacheUrl
from kubectl_sktrace.store.pgconn import reason, translate


@pytest.mark.parametrize(
    ("sql", "with_params", "expected"),
    [
        pytest.param("SELECT a FROM t WHERE b = ? AND c = ?", True, "SELECT a FROM t WHERE b = %s AND c = %s", id="qmark"),
        pytest.param("SELECT a FROM t WHERE ts < :before AND recv < :known", True, "SELECT a FROM t WHERE ts < %(before)s AND recv < %(known)s",
                     id="named"),
        pytest.param("SELECT x::bigint FROM t WHERE y = :y", True, "SELECT x::bigint FROM t WHERE y = %(y)s", id="cast-is-no-name"),
        pytest.param("SELECT 1 FROM events INDEXED BY events_ts WHERE ts < ?", True, "SELECT 1 FROM events WHERE ts < %s", id="hint"),
        pytest.param("SELECT a FROM t WHERE name LIKE 'x%' AND b = ?", True, "SELECT a FROM t WHERE name LIKE 'x%%' AND b = %s", id="percent"),
        pytest.param("SELECT a FROM t WHERE name LIKE 'x%'", False, "SELECT a FROM t WHERE name LIKE 'x%'", id="no-params"),
    ],
)
def test_translate(sql: str, with_params: bool, expected: str) -> None:
    assert translate(sql, with_params=with_params) == expected


def test_a_refused_connection_says_so() -> None:
    error = RuntimeError('connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
                         '\tIs the server running on that host and accepting TCP/IP connections?')
    assert reason(error, CacheUrl("postgresql://127.0.0.1:1/t")) == "Connection refused"


def test_a_servers_error_keeps_what_it_said_and_loses_the_password() -> None:
    target = CacheUrl("postgresql://alice:hunter2@db:5432/t?password=hunter3")
    error = RuntimeError('connection failed: connection to server at "127.0.0.1", port 5432 failed: '
                         'FATAL:  password authentication failed for user "alice" hunter2 hunter3')
    assert reason(error, target) == 'password authentication failed for user "alice" **** ****'
