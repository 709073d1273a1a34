"""TLS made in memory: a server's self-signed certificate whose key goes from the ``openssl`` command to this process
through pipes only, and certificates and keys handed to Python's ``ssl`` (which reads only paths) as anonymous memory
files (Linux: ``memfd_create``, read through ``/proc/self/fd``; no name in any file system, readable only by this
process, gone when closed right after loading) or, where there is none, as a file in a private directory (0700)
removed as soon as OpenSSL has read it.

Keys are EC P-256, as kubeadm's are since 1.31.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Iterator


class TlsUnavailable(Exception):
    """No certificate could be made (no ``openssl`` command, or it failed): one line saying which."""


def self_signed(common_name: str, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), days: int = 3650) -> tuple[bytes, bytes]:
    """A self-signed serving certificate for ``hosts`` (IP addresses and DNS names) and its key, as PEM:
    ``(certificate, key)``; nothing is written to a file."""
    names = ",".join(f"IP:{h}" if h.replace(".", "").isdigit() else f"DNS:{h}" for h in hosts)
    key = _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1"], stdin=b"")
    cert = _openssl(["req", "-new", "-x509", "-key", "/dev/stdin", "-days", str(days), "-subj", f"/CN={common_name}",
                     "-addext", f"subjectAltName={names}", "-addext", "basicConstraints=critical,CA:TRUE"], stdin=key)
    return cert, key


def server_context(cert: bytes, key: bytes, *, client_ca: bytes | None = None) -> ssl.SSLContext:
    """A server's TLS context serving ``cert`` with ``key`` (PEM), loaded from memory files; with ``client_ca``, every
    client must present a certificate it signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with memory_file(cert) as cert_path, memory_file(key) as key_path:
        context.load_cert_chain(cert_path, key_path)
    if client_ca is not None:
        context.load_verify_locations(cadata=client_ca.decode())
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _openssl(args: list[str], *, stdin: bytes) -> bytes:
    if shutil.which("openssl") is None:
        raise TlsUnavailable("no openssl command to make a certificate with: install openssl (the package of your system)")
    done = subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=False)
    if done.returncode != 0 or not done.stdout:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise TlsUnavailable(f"openssl could not make a certificate: {reason[-1] if reason else 'exit code ' + str(done.returncode)}")
    return done.stdout


@contextmanager
def memory_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can read ``data`` from while the block runs, gone when it ends (the module's docstring)."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("kubectl-sktrace-tls", os.MFD_CLOEXEC)
        try:
            _write_all(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    directory = tempfile.mkdtemp(prefix="kubectl-sktrace-tls-")  # mode 0700: no other user may even list it
    path = os.path.join(directory, "pem")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
