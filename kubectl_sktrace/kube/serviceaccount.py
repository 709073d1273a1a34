"""The pod's own service account, when the recorder runs inside the cluster (docs/spec.md §10).

A pod gets its credentials as files (``/var/run/secrets/kubernetes.io/serviceaccount``): ``token``, ``ca.crt``
and ``namespace``. The token is a bound service-account token: it expires (an hour by default) and the
kubelet writes a new one into the volume well before that, by swapping the volume's ``..data`` symlink. A
recorder that reads the token once stops being able to reconnect an hour later, so ``TokenFile`` reads it
again whenever the file changed (one ``stat`` per request, cheaper than client-go's re-read every minute and
never a minute late); the 401 reload of ``client.Kube`` reads it again in any case. The CA file is handed to
the transport by path, and urllib3 loads it for every new connection: a CA bundle the kubelet updates (the
``kube-root-ca.crt`` ConfigMap) is trusted from the next connection on.

A token that cannot be read any more while one was read before keeps the last one (the server says 401 if
it expired, and the reload reports it); a token that was never readable is a one-line error with the fix.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kubectl_sktrace.errors import KubeError

log = logging.getLogger(__name__)

MOUNT_FIX = "mount the service account's token (automountServiceAccountToken: true), or pass --kubeconfig FILE"


class TokenFile:
    """The bearer token in ``path``, read again whenever the file changes. Not thread-safe: the caller locks."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int, int, int] | None = None
        self._token = ""

    def bearer(self) -> str:
        """The token as it is in the file now (surrounding whitespace removed)."""
        try:
            st = os.stat(self.path)  # follows the kubelet's symlinks to the file written last
            seen = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
            if seen != self._seen:
                token = Path(self.path).read_text(encoding="utf-8").strip()
                if not token:
                    raise OSError(f"{self.path} is empty")
                if self._seen is not None:
                    log.info("the service-account token in %s changed: using the new one", self.path)
                self._token, self._seen = token, seen
        except (OSError, UnicodeDecodeError) as exc:
            if not self._token:
                detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise KubeError(f"cannot read the pod's service-account token {self.path}: {detail}; {MOUNT_FIX}") from exc
            log.warning("cannot read the service-account token %s (%s): using the last one read", self.path, exc)
        return self._token


def check_ca_file(path: str) -> str:
    """``path`` when it holds a CA bundle; else the one-line error with the fix."""
    try:
        if Path(path).read_bytes().strip():
            return path
        detail = "the file is empty"
    except OSError as exc:
        detail = exc.strerror or str(exc)
    raise KubeError(f"cannot read the cluster's CA certificate {path}: {detail}; {MOUNT_FIX}")
