"""Security: no credential or Secret value reaches the cache or a trace; private files; loopback only.

Unique strings are planted where a leak could come from: the bearer token of the kubeconfig, a client key
and certificate in it, Secret values (``data`` and ``stringData``, at creation and in a live update), and
an annotation of the Secret (kept: annotations are not secret, which also proves the grep sees Secrets).
The recorder tracks ``v1.Secret`` through a config, then every byte of the cache (main file, WAL, and each
stored event body unpacked) and of the exported traces (msgpack and JSON) is searched for
each planted string, raw and base64-encoded. A positive control records with ``keepSecretData: true`` and
finds the value, so the search is known to work.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

from pathlib import Path
from typing import Any

import pytest
import yaml
from reliability_support import Recorder, assert_one_error, private_env, run_cli

from kubectl_sktrace.store.bodies import packed_body

pytestmark = pytest.mark.timeout(180)

CONFIG = """\
trackedObjects:
  apps/v1.Deployment: {trackLifecycle: true}
  v1.Secret: {}
  v1.ConfigMap: {}
"""


def _plant() -> dict[str, str]:
    tag = secrets.token_hex(8)
    return {name: f"planted-{name}-{tag}" for name in ("token", "data", "stringdata", "update", "env")}


def _forms(value: str) -> list[bytes]:
    """The planted string as it could appear: raw, base64 (Secret data), and base64 of its base64."""
    raw = value.encode()
    once = base64.b64encode(raw)
    return [raw, once, base64.b64encode(once)]


def _client_cert(tmp_path: Path) -> tuple[bytes, bytes] | None:
    if shutil.which("openssl") is None:
        return None
    key, cert = tmp_path / "client.key", tmp_path / "client.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", "/CN=alice", "-days", "1", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return key.read_bytes(), cert.read_bytes()


def _everything_in(cache: Path) -> bytes:
    """Every byte the cache holds: the files, plus each compressed event body inflated."""
    blobs = [p.read_bytes() for p in cache.parent.iterdir() if p.name.startswith(cache.name)]
    conn = sqlite3.connect(cache)
    try:
        for (body,) in conn.execute("SELECT body FROM events WHERE body IS NOT NULL"):
            blobs.append(packed_body(body) if isinstance(body, bytes) else str(body).encode())
        for table in ("meta", "runs", "owners", "discovery"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                blobs.append(repr(row).encode())
    finally:
        conn.close()
    return b"\n".join(blobs)


def _record(tmp_path: Path, emu: Any, planted: dict[str, str], *, config: str, client: tuple[bytes, bytes] | None) -> Path:
    kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
    emu.write_kubeconfig(kubeconfig)
    if client is not None:
        doc = yaml.safe_load(kubeconfig.read_text())
        doc["users"][0]["user"]["client-key-data"] = base64.b64encode(client[0]).decode()
        doc["users"][0]["user"]["client-certificate-data"] = base64.b64encode(client[1]).decode()
        kubeconfig.write_text(yaml.safe_dump(doc))
    (tmp_path / "tracer.yaml").write_text(config)
    emu.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop", "annotations": {"note": "visible"}},
                "type": "Opaque", "data": {"password": base64.b64encode(planted["data"].encode()).decode()},
                "stringData": {"api-key": planted["stringdata"]}})
    rec = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "rec.log",
                   args=["--config", str(tmp_path / "tracer.yaml"), "-v", "9"])
    assert rec.wait_for("initial sync done", timeout=60), rec.output()
    emu.patch("v1", "Secret", "shop", "db", {"data": {"password": base64.b64encode(planted["update"].encode()).decode()}})
    emu.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "late", "namespace": "shop"},
                "data": {"k": base64.b64encode(planted["update"].encode()).decode()}})
    time.sleep(1.5)
    assert rec.stop() == 0, rec.output()
    return cache


def _exports(tmp_path: Path, cache: Path) -> dict[str, bytes]:
    out = {}
    for fmt in ("sktrace", "json"):
        path = tmp_path / f"out.{fmt}"
        run = run_cli(["export", "--cache", str(cache), "-s", "-10m", "-t", "@" + str(int(time.time()) + 2), "--include-namespaces", "shop",
                       "--format", fmt, "-O", str(path)], home=tmp_path)
        assert run.code == 0, run.describe()
        out[fmt] = path.read_bytes()
    return out


def test_no_credential_or_secret_value_is_stored_or_exported(tmp_path: Path) -> None:
    from sktrace_emulator import Emulator

    planted = _plant()
    client = _client_cert(tmp_path)
    with Emulator(token=planted["token"], seed=11) as emu:
        cache = _record(tmp_path, emu, planted, config=CONFIG, client=client)
        exports = _exports(tmp_path, cache)
    stored = _everything_in(cache)
    assert b"visible" in stored and b"visible" in exports["json"], "the Secret itself was recorded and exported"
    assert b"password" in exports["json"] and b"api-key" in stored, "Secret keys are kept, only values blanked"
    haystacks = {"cache": stored, **{f"export.{fmt}": data for fmt, data in exports.items()}}
    log = (tmp_path / "rec.log").read_bytes()
    haystacks["recorder log at -v 9"] = log
    leaks = [(where, name) for name, value in planted.items() for where, data in haystacks.items()
             for form in _forms(value) if form in data]
    assert not leaks, f"planted secrets found: {leaks}"
    if client is not None:
        key_body = b"".join(client[0].splitlines()[1:-1])[:48]
        pem_leaks = [where for where, data in haystacks.items() if key_body in data or base64.b64encode(client[0])[:64] in data]
        assert not pem_leaks, f"the client key leaked into {pem_leaks}"
    print(f"\nsecurity: {len(planted)} planted strings x 3 encodings searched in {len(haystacks)} places "
          f"({sum(len(d) for d in haystacks.values()):,} bytes), client key {'planted' if client else 'skipped (no openssl)'}")


def test_keep_secret_data_is_the_only_way_values_are_stored(tmp_path: Path) -> None:
    """The positive control: with the opt-in, the same search finds the value, so the search works."""
    from sktrace_emulator import Emulator

    planted = _plant()
    with Emulator(token=planted["token"], seed=12) as emu:
        cache = _record(tmp_path, emu, planted, config=CONFIG.replace("v1.Secret: {}", "v1.Secret: {keepSecretData: true}"), client=None)
    stored = _everything_in(cache)
    assert any(form in stored for form in _forms(planted["data"]))
    assert not any(form in stored for form in _forms(planted["token"])), "the token is never stored, opt-in or not"


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_cache_directory_and_files_are_private(tmp_path: Path, umask: int) -> None:
    from sktrace_emulator import Emulator

    with Emulator(seed=13) as emu:
        kubeconfig = tmp_path / "kubeconfig"
        emu.write_kubeconfig(kubeconfig)
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("kubectl-sktrace")), "start", "--kubeconfig", str(kubeconfig), "--duration", "1s"],
            env=private_env(tmp_path), capture_output=True, timeout=90, preexec_fn=lambda: os.umask(umask),
        )
        assert proc.returncode == 0, proc.stderr.decode()
    state = tmp_path / "state" / "kubectl-sktrace"
    files = sorted(state.iterdir())
    assert files, "the default cache lives under $XDG_STATE_HOME/kubectl-sktrace"
    assert state.stat().st_mode & 0o777 == 0o700
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in files}
    assert all(mode == "0o600" for mode in modes.values()), modes


def _listening_inodes() -> dict[str, str]:
    """inode -> local address of every listening TCP socket (IPv4 and IPv6) on this host."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    found[fields[9]] = fields[1]
    return found


def _sockets_of(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        match = re.fullmatch(r"socket:\[(\d+)\]", target)
        if match:
            inodes.add(match.group(1))
    return inodes


def test_emulator_and_recorder_listen_on_loopback_only(tmp_path: Path) -> None:
    """The standalone emulator listens on 127.0.0.1 only; the recorder listens on nothing at all."""
    from sktrace_emulator import Emulator

    with Emulator(seed=14) as emu:  # the in-process server too
        assert emu._httpd is not None and emu._httpd.server_address[0] == "127.0.0.1"
        assert emu.url.split("://")[1].startswith("127.0.0.1:")
    kubeconfig = tmp_path / "kubeconfig"
    server = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig)],
                              env=private_env(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not kubeconfig.exists() or not kubeconfig.read_text().strip().endswith(("}", "\n")):
            assert time.monotonic() < deadline and server.poll() is None, "the emulator did not write its kubeconfig"
            time.sleep(0.05)
        time.sleep(0.2)
        listening = _listening_inodes()
        server_listens = [listening[i] for i in _sockets_of(server.pid) if i in listening]
        assert server_listens, "the emulator listens"
        assert all(addr.startswith("0100007F:") for addr in server_listens), server_listens  # 127.0.0.1, little-endian hex
        rec = Recorder(kubeconfig=kubeconfig, cache=tmp_path / "cache.db", home=tmp_path, log=tmp_path / "rec.log")
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        listening = _listening_inodes()
        assert not [listening[i] for i in _sockets_of(rec.proc.pid) if i in listening], "the recorder opened a listening socket"
        assert rec.stop() == 0
    finally:
        server.terminate()
        server.wait(timeout=30)


def _pem_body(pem: bytes) -> bytes:
    """The first 48 base64 bytes of a PEM's body: what any file holding it (raw, not re-encoded) contains."""
    return b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))[:48]


def _files_holding(directory: Path, pems: dict[str, bytes]) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*")):
        data = path.read_bytes() if path.is_file() else b""
        found += [f"{path.relative_to(directory)}: {name}" for name, pem in pems.items() if _pem_body(pem) in data]
    return found


def _open_memory_files(pid: int) -> list[str]:
    targets = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            continue
    return [target for target in targets if target.startswith("/memfd:")]


@pytest.fixture(scope="module")
def clients() -> dict[str, tuple[bytes, bytes]]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    from sktrace_emulator import pki

    ca = pki.self_signed("clients")
    return {"ca": ca, "alice": pki.client_certificate(ca, "alice"), "bob": pki.client_certificate(ca, "bob"),
            "stranger": pki.client_certificate(pki.self_signed("another-cluster's-clients"), "alice")}


def test_no_certificate_or_key_is_in_a_file_while_recording_or_after_a_kill(tmp_path: Path, clients: dict[str, Any]) -> None:
    """A kubeconfig with the cluster's CA, a client certificate and its key as ``*-data`` fields (kind's, kubeadm's):
    the recording authenticates with the certificate over mutual TLS, and the system temp directory it is given holds
    none of them while it runs nor after a SIGKILL, which runs no exit hook."""
    from sktrace_emulator import Emulator

    temp = tmp_path / "tmp"
    temp.mkdir()
    with Emulator(client_ca=clients["ca"][0], seed=15) as emu:
        kubeconfig = tmp_path / "kubeconfig"
        emu.write_kubeconfig(kubeconfig, client_certificate=clients["alice"])
        pems = {"client key": clients["alice"][1], "client certificate": clients["alice"][0], "cluster CA": emu.ca_pem}
        rec = Recorder(kubeconfig=kubeconfig, cache=tmp_path / "cache.db", home=tmp_path, log=tmp_path / "rec.log",
                       env={"TMPDIR": str(temp)})
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        running, memory_files = _files_holding(temp, pems), _open_memory_files(rec.proc.pid)
        assert rec.kill() == -signal.SIGKILL
    assert running == [], "while recording"
    assert _files_holding(temp, pems) == [], "after the kill"
    assert memory_files == [], "each memory file is closed once loaded"


@pytest.mark.parametrize(("client", "problem", "fix"), [
    pytest.param("stranger", "refused the TLS handshake ([SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca): it does "
                 "not accept the client certificate of context 'emulator'", "check client-certificate and client-key of "
                 "its user in your kubeconfig", id="signed-by-another-ca"),
    pytest.param("mismatched", "cannot use the client certificate of context 'emulator' ([X509: KEY_VALUES_MISMATCH] key "
                 "values mismatch)", "check client-certificate and client-key", id="key-of-another-certificate"),
])
def test_a_client_certificate_that_cannot_be_used_is_one_line(tmp_path: Path, clients: dict[str, Any], client: str,
                                                              problem: str, fix: str) -> None:
    from sktrace_emulator import Emulator

    pair = clients["stranger"] if client == "stranger" else (clients["alice"][0], clients["bob"][1])
    with Emulator(client_ca=clients["ca"][0], seed=16) as emu:
        kubeconfig = tmp_path / "kubeconfig"
        emu.write_kubeconfig(kubeconfig, client_certificate=pair)
        run = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(tmp_path / "cache.db"), "--duration", "5s"],
                      home=tmp_path, timeout=90)
    assert_one_error(run, problem, fix)
