"""Which cluster to talk to, and where its cache lives: kubectl's kubeconfig loading rules.

The rules are kubectl's, not the Python client's (which takes ``current-context`` from the *last* file of
``KUBECONFIG`` and treats ``a:b`` as one missing path):

- ``--kubeconfig FILE`` alone, when given (it must exist);
- else every file of ``$KUBECONFIG`` (``os.pathsep``-separated; missing files skipped, as kubectl does),
  merged: the first file that sets ``current-context`` wins, and the first occurrence of each named
  cluster, user and context wins;
- else ``~/.kube/config``;
- ``--context`` overrides the current context;
- the in-cluster service account only when no kubeconfig file was found and ``KUBERNETES_SERVICE_HOST``
  and ``KUBERNETES_SERVICE_PORT`` are set: the pod's token, CA and namespace files are read from
  ``/var/run/secrets/kubernetes.io/serviceaccount``, or from the directory ``SKTRACE_SERVICE_ACCOUNT_DIR``
  names (a service account mounted elsewhere; the tests lay one out in a temporary directory).

Relative file paths inside a kubeconfig (``certificate-authority``, ``client-certificate``, ``client-key``,
``tokenFile``, an exec ``command`` with a path separator) are relative to the file that holds them; they
are made absolute here so the merged dict can be handed to the client without its file origins.

This module reads files and never imports ``kubernetes``: offline commands use it to name the default
cache file without paying for the client. Nothing is ever written to a kubeconfig.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from kubectl_sktrace.errors import KubeError, UsageError
from kubectl_sktrace.model import CacheUrl, is_database_url, mask_url

IN_CLUSTER = "in-cluster"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_DIR_ENV = "SKTRACE_SERVICE_ACCOUNT_DIR"

_CLUSTER_PATH_KEYS = ("certificate-authority",)
_USER_PATH_KEYS = ("client-certificate", "client-key", "tokenFile")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class KubeTarget:
    """The resolved cluster: context name, API server URL, the context's namespace, and the config.

    ``config`` is a kubeconfig dict holding only the chosen context, its cluster and its user, with file
    paths made absolute; for the in-cluster service account it is ``{"in-cluster": True, ...}``.
    """

    context: str
    cluster_server: str
    namespace: str | None
    config: dict[str, Any] = field(compare=False, hash=False, repr=False)

    @property
    def in_cluster(self) -> bool:
        return bool(self.config.get(IN_CLUSTER))


def resolve_target(*, kubeconfig: str | None, context: str | None, environ: Mapping[str, str] = os.environ) -> KubeTarget:
    """Resolve the cluster to record by kubectl's rules; KubeError names what is missing and the fix."""
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    if not files:
        target = _in_cluster_target(environ)
        if target is not None:
            return target
        raise KubeError(f"no kubeconfig found ({_where_we_looked(kubeconfig, environ)}); "
                        "pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config")
    merged = _merge([(path, _load_file(path)) for path in files])
    name = _context_name(merged, context=context, files=files)
    ctx = merged["contexts"].get(name)
    if ctx is None:
        available = ", ".join(sorted(merged["contexts"])) or "none"
        raise KubeError(f"context {name!r} not found in {_describe(files)}; available contexts: {available}; "
                        "pass --context with one of them")
    cluster_name = ctx.get("cluster")
    cluster = merged["clusters"].get(cluster_name) if isinstance(cluster_name, str) else None
    if cluster is None:
        raise KubeError(f"context {name!r} refers to cluster {cluster_name!r}, which is not in {_describe(files)}; "
                        "add the cluster or fix the context")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeError(f"cluster {cluster_name!r} of context {name!r} has no server URL in {_describe(files)}; "
                        "set clusters[].cluster.server")
    user_name = ctx.get("user")
    user = merged["users"].get(user_name) if isinstance(user_name, str) else None
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "contexts": [{"name": name, "context": dict(ctx)}],
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}] if user is not None else [],
    }
    namespace = ctx.get("namespace")
    return KubeTarget(context=name, cluster_server=server.rstrip("/"),
                      namespace=namespace if isinstance(namespace, str) and namespace else None, config=config)


def default_cache_path(context: str, *, environ: Mapping[str, str] = os.environ) -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/<context>.db``, the context made file-safe.

    Characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_`` (EKS contexts are ARNs with
    ``:`` and ``/``); when anything was replaced, a short hash of the real name is appended so two
    contexts that differ only in those characters never share a cache.
    """
    safe = _UNSAFE.sub("_", context)
    if safe != context or not safe or safe.startswith("."):
        import hashlib  # only for such a name: every command checks its --cache here, none else needs it

        digest = hashlib.sha256(context.encode("utf-8")).hexdigest()[:8]
        safe = f"{safe.lstrip('.')}-{digest}" if safe.lstrip(".") else digest
    return state_dir(environ) / f"{safe}.db"


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace``, where the default caches live."""
    state = environ.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else _home(environ) / ".local" / "state"
    return base / "kubectl-sktrace"


def names_no_cluster(*, kubeconfig: str | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether nothing names a cluster: no ``--kubeconfig``, no ``KUBECONFIG``, no ``~/.kube/config`` and no
    in-cluster service account."""
    if kubeconfig or environ.get("KUBECONFIG"):
        return False
    return not (_home(environ) / ".kube" / "config").is_file() and _in_cluster_target(environ) is None


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


_MISSPELT_DATABASE_URL = re.compile(r"^postgres(?:ql)?:(?!//)/?", re.IGNORECASE)  # postgresql:/…, postgres:host/…


def check_cache_location(cache: str) -> None:
    """Refuse a ``--cache`` URL other than a PostgreSQL database's (``s3://…``, ``file://…``): a URL taken as a
    path would create a directory named after its scheme."""
    if _URL.match(cache) and not is_database_url(cache):
        raise UsageError(f"--cache {mask_url(cache)}: only local sqlite files and postgresql:// URLs are supported; "
                         "pass a file path or a postgresql://user@host:port/database URL")
    scheme = _MISSPELT_DATABASE_URL.match(cache)
    if scheme:  # its credentials are not printed: the URL cannot be parsed to find them
        raise UsageError(f"--cache {scheme.group(0)}…: not a PostgreSQL URL (a file of that name is not meant either); "
                         "write it postgresql://user@host:port/database")


def resolve_cache_path(*, cache: str | None, kubeconfig: str | None, context: str | None,
                       environ: Mapping[str, str] = os.environ) -> Path | CacheUrl:
    """``--cache`` when given (a local file, or a PostgreSQL database; another URL is refused); else the default
    file of the context kubectl would use.

    Only the context *name* is needed, so this works offline and does not check the cluster entry. In a
    database, the context's name names its history: ``--context``, else the kubeconfig's current context, else
    (no kubeconfig at all) none, and a reader takes the database's only history.
    """
    if cache and is_database_url(cache):
        return CacheUrl(cache, history=context or _current_context_name(kubeconfig=kubeconfig, environ=environ))
    if cache:
        check_cache_location(cache)
        return Path(os.path.expanduser(cache))
    if context:
        path = default_cache_path(context, environ=environ)
        if not path.exists():  # no history of that name: a context the kubeconfig lacks is a typo, said as start says it
            _check_context(context, kubeconfig=kubeconfig, environ=environ)
        return path
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    if not files:
        if _in_cluster_target(environ) is not None:
            return default_cache_path(IN_CLUSTER, environ=environ)
        raise KubeError(f"no kubeconfig found to name the default cache ({_where_we_looked(kubeconfig, environ)}); "
                        "pass --cache FILE or --context NAME")
    merged = _merge([(path, _load_file(path)) for path in files])
    return default_cache_path(_context_name(merged, context=None, files=files), environ=environ)


def context_namespace(*, kubeconfig: str | None, context: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The namespace kubectl would use without ``-n``: the context's ``namespace``, else ``default`` (also without a
    kubeconfig, or with a context it lacks)."""
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    if not files:
        return "default"
    merged = _merge([(path, _load_file(path)) for path in files])
    name = context or merged["current-context"]
    entry = merged["contexts"].get(name) if name else None
    found = entry.get("namespace") if isinstance(entry, dict) else None
    return found if isinstance(found, str) and found else "default"


def _check_context(name: str, *, kubeconfig: str | None, environ: Mapping[str, str]) -> None:
    """KubeError when a kubeconfig exists and has no context ``name`` (none at all: nothing to check it against)."""
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    if not files:
        return
    contexts = _merge([(path, _load_file(path)) for path in files])["contexts"]
    if name not in contexts:
        available = ", ".join(sorted(contexts)) or "none"
        raise KubeError(f"context {name!r} not found in {_describe(files)}, and no cache records it; available contexts: "
                        f"{available}; pass --context with one of them, or --cache FILE")


def _current_context_name(*, kubeconfig: str | None, environ: Mapping[str, str]) -> str | None:
    """The context kubectl would use, by name; None when there is no kubeconfig (nor a service account)."""
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    if not files:
        return IN_CLUSTER if _in_cluster_target(environ) is not None else None
    return _context_name(_merge([(path, _load_file(path)) for path in files]), context=None, files=files)


def list_contexts(*, kubeconfig: str | None, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The context names of the kubeconfig kubectl would read (every file of ``KUBECONFIG`` merged), sorted;
    KubeError when a file cannot be read. Shell completion offers them for ``--context``."""
    files = _kubeconfig_files(kubeconfig=kubeconfig, environ=environ)
    return sorted(_merge([(path, _load_file(path)) for path in files])["contexts"])


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def _kubeconfig_files(*, kubeconfig: str | None, environ: Mapping[str, str]) -> list[Path]:
    if kubeconfig:
        path = Path(os.path.expanduser(kubeconfig))
        if not path.is_file():
            raise KubeError(f"kubeconfig file {str(path)!r} (from --kubeconfig) does not exist; check the path")
        return [path]
    env = environ.get("KUBECONFIG")
    if env:
        seen: list[Path] = []
        for part in env.split(os.pathsep):
            if not part:
                continue
            path = Path(os.path.expanduser(part))
            if path.is_file() and path not in seen:
                seen.append(path)
        return seen
    default = _home(environ) / ".kube" / "config"
    return [default] if default.is_file() else []


def _where_we_looked(kubeconfig: str | None, environ: Mapping[str, str]) -> str:
    if environ.get("KUBECONFIG"):
        return f"none of the files in KUBECONFIG={environ['KUBECONFIG']} exists"
    return f"no KUBECONFIG and no {_home(environ) / '.kube' / 'config'}"


def _describe(files: list[Path]) -> str:
    return "kubeconfig " + os.pathsep.join(str(p) for p in files)


def _load_file(path: Path) -> dict[str, Any]:
    import yaml  # read here only: checking a --cache location (every command) needs no YAML

    from kubectl_sktrace import safeyaml

    try:
        with path.open(encoding="utf-8") as stream:
            text = stream.read(safeyaml.MAX_CHARS + 1)  # past the bound: refused without reading the rest
    except OSError as exc:
        raise KubeError(f"cannot read kubeconfig {str(path)!r}: {exc.strerror or exc}; check its permissions") from exc
    except UnicodeDecodeError as exc:
        raise KubeError(f"kubeconfig {str(path)!r} is not UTF-8 text; fix the file or point --kubeconfig elsewhere") from exc
    try:
        data = safeyaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise KubeError(f"kubeconfig {str(path)!r} is not valid YAML{where} ({problem}); fix the file "
                        "or point --kubeconfig elsewhere") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise KubeError(f"kubeconfig {str(path)!r} is not a kubeconfig (expected a mapping with clusters, users "
                        "and contexts); fix the file or point --kubeconfig elsewhere")
    for section in ("clusters", "users", "contexts"):
        entries = data.get(section)
        if entries is not None and not isinstance(entries, list):
            raise KubeError(f"kubeconfig {str(path)!r}: {section} must be a list; fix the file")
    return data


def _merge(loaded: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """kubectl's merge: first current-context wins, first entry of each name wins."""
    merged: dict[str, Any] = {"current-context": None, "clusters": {}, "users": {}, "contexts": {}}
    for path, data in loaded:
        current = data.get("current-context")
        if merged["current-context"] is None and isinstance(current, str) and current:
            merged["current-context"] = current
        base = path.parent.resolve()
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in data.get(section) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise KubeError(f"kubeconfig {str(path)!r}: every entry of {section} needs a name; fix the file")
                body = entry.get(inner) or {}
                if not isinstance(body, dict):
                    raise KubeError(f"kubeconfig {str(path)!r}: {section} entry {entry['name']!r} has no "
                                    f"{inner} mapping; fix the file")
                if entry["name"] not in merged[section]:
                    merged[section][entry["name"]] = _absolute_paths(section, body, base)
    return merged


def _absolute_paths(section: str, body: dict[str, Any], base: Path) -> dict[str, Any]:
    keys = _CLUSTER_PATH_KEYS if section == "clusters" else _USER_PATH_KEYS if section == "users" else ()
    out = dict(body)
    for key in keys:
        value = out.get(key)
        if isinstance(value, str) and value:
            out[key] = _resolve(value, base)
    exec_ = out.get("exec") if section == "users" else None
    if isinstance(exec_, dict):
        command = exec_.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(os.path.expanduser(command)):
            out["exec"] = {**exec_, "command": str(base / command)}
    return out


def _resolve(value: str, base: Path) -> str:
    expanded = os.path.expanduser(value)
    return expanded if os.path.isabs(expanded) else str(base / expanded)


def _context_name(merged: dict[str, Any], *, context: str | None, files: list[Path]) -> str:
    if context:
        return context
    current = merged["current-context"]
    if not current:
        available = ", ".join(sorted(merged["contexts"])) or "none"
        raise KubeError(f"no current-context in {_describe(files)}; pass --context NAME "
                        f"(available contexts: {available})")
    return str(current)


def _in_cluster_target(environ: Mapping[str, str]) -> KubeTarget | None:
    host = environ.get("KUBERNETES_SERVICE_HOST")
    port = environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    mount = environ.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR
    namespace: str | None = None
    try:  # the pod's namespace: what a refusal everywhere else suggests recording (-n)
        namespace = Path(mount, "namespace").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        pass
    return KubeTarget(context=IN_CLUSTER, cluster_server=server, namespace=namespace,
                      config={IN_CLUSTER: True, "token-file": os.path.join(mount, "token"),
                              "ca-file": os.path.join(mount, "ca.crt")})
