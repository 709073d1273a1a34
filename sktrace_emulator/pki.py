"""Certificates for the emulator, made by the ``openssl`` command: its serving certificate, and a client CA with the
client certificates it signs (``Emulator(client_ca=...)``, ``serve --client-certificates``), as a cluster's CA signs
its users' certificates (kind, kubeadm, minikube: the user is the certificate's common name, its groups the
organizations). Keys are EC P-256, as kubeadm's are since 1.31; the files live in a temporary directory removed
before returning, and the PEM is returned in memory.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def self_signed(common_name: str, *, extensions: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A self-signed certificate (a CA, or a server's own) and its key, as PEM: ``(certificate, key)``."""
    with tempfile.TemporaryDirectory(prefix="sktrace-emulator-") as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        _openssl(["req", "-x509", *EC_KEY, "-keyout", key, "-out", cert, "-days", "3650", "-subj", f"/CN={common_name}",
                  *[arg for ext in extensions for arg in ("-addext", ext)]])
        return _read(cert), _read(key)


def client_certificate(ca: tuple[bytes, bytes], user: str, *, groups: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A client certificate for ``user`` (its common name; ``groups`` its organizations) signed by ``ca``
    (``(certificate, key)``, e.g. from ``self_signed``), and its key: ``(certificate, key)``."""
    subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
    with tempfile.TemporaryDirectory(prefix="sktrace-emulator-") as tmp:
        paths = {name: os.path.join(tmp, name) for name in ("ca.pem", "ca.key", "client.csr", "client.pem", "client.key")}
        _write(paths["ca.pem"], ca[0])
        _write(paths["ca.key"], ca[1])
        _openssl(["req", "-new", *EC_KEY, "-keyout", paths["client.key"], "-out", paths["client.csr"], "-subj", subject])
        _openssl(["x509", "-req", "-in", paths["client.csr"], "-CA", paths["ca.pem"], "-CAkey", paths["ca.key"],
                  "-CAcreateserial", "-out", paths["client.pem"], "-days", "365",
                  "-extfile", _client_extensions(tmp)])
        return _read(paths["client.pem"]), _read(paths["client.key"])


def _client_extensions(directory: str) -> str:
    path = os.path.join(directory, "client.ext")
    _write(path, b"keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n")
    return path


def _openssl(args: list[str]) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
