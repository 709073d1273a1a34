"""The TLS context of a connection, built in memory: no certificate or key is left in a file.

The ``kubernetes`` loader writes every ``*-data`` field of a kubeconfig (the CA, the client certificate, its key) and
the certificate and key an exec plugin prints to files of the system temp directory, removed only by an ``atexit``
hook: a ``kill -9``, an OOM kill or a crash leaves a user's private key there for good. ``client`` keeps that data
from the loader and builds one ``ssl.SSLContext`` from it at each (re)load, which the connection pool uses as it is.

Python's ``ssl`` reads certificates and keys only from paths. Each one held in memory is handed to OpenSSL as an
anonymous memory file (Linux: ``memfd_create``, read through ``/proc/self/fd``; no name in any file system, readable
only by this process, gone when closed right after loading) or, where there is none, as a file in a private
directory (0700) removed as soon as OpenSSL has read it. Files the user's kubeconfig names are read where they are
and never touched.

The context starts as urllib3's own (``create_urllib3_context``: protocol versions, ciphers, hostname checks), so a
connection negotiates as it did when urllib3 built it; without a CA in the kubeconfig, ``certifi``'s bundle is trusted,
as the ``kubernetes`` client does. A context that skips verification (``insecure-skip-tls-verify``) loads no CA.
"""

from __future__ import annotations

import ssl
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from urllib3.util.ssl_ import create_urllib3_context

from kubectl_sktrace.kube.errors import certificate_authority_error, client_certificate_error
from sktrace_apiserver.tls import memory_file


@dataclass(frozen=True)
class Pem:
    """One certificate or key: its bytes (a kubeconfig's ``*-data`` field, an exec plugin's output) or the path of a
    file the user's kubeconfig names. Empty: none."""

    data: bytes | None = None
    path: str | None = None

    def __bool__(self) -> bool:
        return bool(self.data) or bool(self.path)


@dataclass(frozen=True)
class TlsMaterial:
    """What a context is built from."""

    verify: bool
    ca: Pem = Pem()
    cert: Pem = Pem()
    key: Pem = Pem()


def client_context(material: TlsMaterial, *, host: str, context: str) -> ssl.SSLContext:
    """The TLS context for ``host``; a CA or a client certificate that cannot be loaded is a one-line KubeError."""
    ssl_context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if material.verify else ssl.CERT_NONE)
    if material.verify:
        try:
            with _readable(material.ca or Pem(path=_default_bundle())) as path:
                ssl_context.load_verify_locations(cafile=path)
        except (ssl.SSLError, OSError) as exc:
            raise certificate_authority_error(_reason(exc), host=host, context=context) from exc
    if material.cert:
        try:
            with _readable(material.cert) as cert, _readable(material.key) as key:
                ssl_context.load_cert_chain(cert, key or None, password=_no_password)
        except (ssl.SSLError, OSError, _EncryptedKey) as exc:
            raise client_certificate_error(_reason(exc), context=context) from exc
    return ssl_context


class _EncryptedKey(Exception):
    """OpenSSL asked for a passphrase: a kubeconfig has no place for one, and a prompt would hang a recording."""

    def __str__(self) -> str:
        return "the client key is encrypted; a kubeconfig's key must be unencrypted"


def _no_password() -> bytes:
    raise _EncryptedKey()


def _reason(exc: BaseException) -> str:
    text = str(exc.args[1] if isinstance(exc, ssl.SSLError) and len(exc.args) > 1 else exc)
    return " ".join(text.split(" (_ssl.c")[0].split()) or type(exc).__name__


def _default_bundle() -> str:
    import certifi  # the bundle the kubernetes client trusts when a cluster names no CA

    return str(certifi.where())


@contextmanager
def _readable(pem: Pem) -> Iterator[str]:
    """A path OpenSSL can read ``pem`` from while the block runs ("" for none): the user's own file as it is, or
    data held in memory as a memory file that is gone when the block ends."""
    if pem.data:
        with memory_file(pem.data) as path:
            yield path
    else:
        yield pem.path or ""
