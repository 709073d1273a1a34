"""A real PostgreSQL server for the tests: Debian's binaries, a cluster initialized into a temporary directory,
listening on a free loopback port, stopped at the end of the session.

As root (CI, this machine) the cluster runs as the ``postgres`` user, which must own its directory. Local
connections (the unix socket in the cluster's directory) trust the superuser, which creates the test role and
databases; TCP connections, the tests' own, need the role's password (scram-sha-256), so a wrong one is refused
as on a real server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROLE = "sktrace"
PASSWORD = "s3cret-pw"


def find_bindir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: Debian's ``/usr/lib/postgresql/*/bin`` (newest), else
    ``pg_config --bindir``; None when there are none."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
                            reverse=True):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip()
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    bindir: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="sktrace-pg-")))
    port: int = field(default_factory=_free_port)
    fsync: bool = False  # the tests need no durability against a power cut; a benchmark measures with it

    @property
    def data(self) -> Path:
        return self.root / "data"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        user = "postgres" if os.geteuid() == 0 else None
        return subprocess.run([str(self.bindir / args[0]), *args[1:]], capture_output=True, text=True, check=True, user=user,
                              timeout=120, cwd=self.root)

    def start(self) -> PgServer:
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.root.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
                  "--encoding=UTF8", "--locale=C.UTF-8", "--locale-provider=icu", "--icu-locale=en-US", "--no-sync")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync={'on' if self.fsync else 'off'} -c max_connections=60"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "-t", "60", "start")
        self.admin(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
        return self

    def admin(self, sql: str, *, database: str = "postgres") -> None:
        """Run ``sql`` as the superuser, over the unix socket."""
        import psycopg

        with psycopg.connect(host=str(self.root), port=self.port, user="postgres", dbname=database, autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self) -> str:
        """A fresh database owned by the test role; its URL (password included)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.admin(f"CREATE DATABASE {name} OWNER {ROLE}")
        self.admin(f"ALTER SCHEMA public OWNER TO {ROLE}", database=name)
        return self.url(name)

    def url(self, database: str, *, password: str = PASSWORD) -> str:
        return f"postgresql://{ROLE}:{password}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
