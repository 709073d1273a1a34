"""Traces on object storage: ``export -O s3://bucket/key.sktrace``, ``inspect`` and ``validate`` of such URLs
(docs/spec.md §2). The only importer of fsspec, and it imports it lazily: the other commands never pay for it.

- A URL is ``PROTOCOL://...`` with a protocol fsspec knows: ``s3://`` (s3fs, in the ``cloud`` extra),
  ``gs://`` (gcsfs), ``az://`` (adlfs) and the rest of fsspec's registry. Without fsspec, or without the
  protocol's backend, the error names what to install.
- ``file://PATH`` is the local path PATH (as fsspec reads it: ``file:///abs``, ``file://relative``). It needs no
  extra and is written as any local file is (``output``): whole or not at all, mode kept.
- Credentials and endpoints come from the backend's own chain: for S3, botocore's environment variables
  (``AWS_PROFILE``, ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL`` for S3-compatible stores such as MinIO, ...),
  ``~/.aws/config`` and ``~/.aws/credentials``. Nothing here reads them, and no message repeats them.
- An object appears whole or not at all: it is written with ``autocommit=False`` (for S3, a multipart upload
  of 50 MiB parts, completed by ``commit()``) and discarded (the upload aborted) when anything fails before the
  commit. fsspec's default would commit on close, even when the writer raised. An existing object is replaced,
  as a local file is; a URL that names no object (a bucket, a ``.../`` folder) is refused, as a directory is.
"""

from __future__ import annotations

import contextlib
import re
from typing import IO, Any, Callable, TypeVar

from kubectl_sktrace.errors import SktraceError, TraceFormatError, UsageError

T = TypeVar("T")

CLOUD_EXTRA = "pip install 'kubectl-sktrace[cloud]'"
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)
_FILE = "file"
# what to set when the store says who we are is not allowed, per protocol (botocore's, Google's, Azure's chains)
_CREDENTIALS = {
    "s3": "AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
    "s3a": "AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS or 'gcloud auth application-default login'",
    "gcs": "GOOGLE_APPLICATION_CREDENTIALS or 'gcloud auth application-default login'",
    "az": "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_NAME with 'az login'",
    "abfs": "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_NAME with 'az login'",
}
_ENDPOINT = {"s3": "AWS_ENDPOINT_URL", "s3a": "AWS_ENDPOINT_URL"}
# exception classes (by name: the backends' own packages are not imported here) that mean no connection or no credentials
_UNREACHABLE = {"EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError", "ServerDisconnectedError",
                "ConnectionError", "TimeoutError", "ServerTimeoutError"}
_CLIENT_PACKAGES = {"botocore", "aiobotocore", "s3fs", "gcsfs", "adlfs", "aiohttp", "fsspec", "azure", "google"}
_NO_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError", "ClientAuthenticationError"}


def protocol_of(path: str) -> str | None:
    """The protocol of a URL (lowercase), or None for a local path. Pure."""
    match = _URL.fullmatch(path)
    return match.group(1).lower() if match else None


def file_url_path(path: str) -> str | None:
    """The local path a ``file://`` URL names, as fsspec reads it (no host, no percent-decoding). Pure."""
    match = _URL.fullmatch(path)
    return match.group(2) if match and match.group(1).lower() == _FILE else None


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URL of a store other than the local disk. Pure."""
    protocol = protocol_of(path)
    return protocol is not None and protocol != _FILE


def write_object(url: str, write: Callable[[IO[bytes]], T]) -> T:
    """Run ``write`` on a new object at ``url`` and make it appear only once ``write`` returned and every byte is
    stored; on any failure the object (or the old one) stays as it was. UsageError, one line, when it cannot."""
    if not _names_an_object(url):
        raise UsageError(f"cannot write {url}: it names no object (a bucket or a folder); pass a URL like "
                         f"{protocol_of(url)}://bucket/trace.sktrace with -O/--output-file")
    fs, path = _filesystem(url, verb="write")
    try:
        handle = fs.open(path, "wb", autocommit=False)
    except Exception as exc:
        raise _write_error(url, exc) from None
    try:
        result = write(handle)
        handle.close()  # uploads the last part; nothing is visible yet
        handle.commit()
    except BaseException as exc:
        _discard(handle)
        if isinstance(exc, Exception) and not isinstance(exc, SktraceError) and _is_store_error(exc):
            raise _write_error(url, exc) from None
        raise
    return result


def read_object(url: str) -> bytes:
    """The bytes of the object at ``url``; TraceFormatError (one line naming the URL) when it cannot be read."""
    fs, path = _filesystem(url, verb="read")
    try:
        data: bytes = fs.cat_file(path)
    except IsADirectoryError:
        raise TraceFormatError(f"{url}: is a folder, not a trace; pass the URL of a trace object") from None
    except Exception as exc:
        if isinstance(exc, FileNotFoundError) and _error_code(exc) != "NoSuchBucket":
            raise TraceFormatError(f"{url}: no such object; check the URL, or write a trace with "
                                   f"'kubectl sktrace export -O {url}'") from None
        raise TraceFormatError(f"{url}: {_reason(url, exc)}") from None
    return data


def open_object(url: str) -> IO[bytes]:
    """The object at ``url`` opened for reading as a stream (an audit log is read line by line, never whole);
    UsageError (one line naming the URL) when it cannot be opened."""
    fs, path = _filesystem(url, verb="read")
    try:
        return fs.open(path, "rb")  # type: ignore[no-any-return]
    except Exception as exc:
        if isinstance(exc, FileNotFoundError) and _error_code(exc) != "NoSuchBucket":
            raise UsageError(f"{url}: no such object; check the URL") from None
        raise UsageError(f"{url}: {_reason(url, exc)}") from None


def _filesystem(url: str, *, verb: str) -> tuple[Any, str]:
    """fsspec's filesystem for ``url`` and the path in it; UsageError naming what to install when it is missing."""
    protocol = protocol_of(url) or ""
    try:
        import fsspec
        from fsspec.registry import known_implementations, registry
    except ImportError:
        raise UsageError(f"cannot {verb} {url}: {protocol}:// URLs need the cloud extra; {CLOUD_EXTRA}") from None
    known = known_implementations.get(protocol)
    if known is None and protocol not in registry:
        raise UsageError(f"cannot {verb} {url}: unknown protocol {protocol}://; use s3://, gs://, az://, file:// or a local path")
    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]
    except ImportError:
        package = str((known or {}).get("class", protocol)).split(".")[0]
        fix = CLOUD_EXTRA if package == "s3fs" else f"pip install {package}"
        raise UsageError(f"cannot {verb} {url}: {protocol}:// URLs need the package {package}, which is not installed; {fix}") from None
    except Exception as exc:
        raise UsageError(f"cannot {verb} {url}: {_one_line(exc)}; check the URL") from None


def _names_an_object(url: str) -> bool:
    """A URL names an object when it has a key after the bucket and does not end in ``/``. Pure."""
    match = _URL.fullmatch(url)
    bucket, _, key = (match.group(2) if match else "").partition("/")
    return bool(bucket) and bool(key) and not key.endswith("/")


def _discard(handle: Any) -> None:
    """Abort what was uploaded; the handle is then closed so that its finalizer uploads nothing more."""
    with contextlib.suppress(Exception):
        handle.discard()
    with contextlib.suppress(Exception):
        handle.closed = True


def _is_store_error(exc: Exception) -> bool:
    """An error of the store or its client (as opposed to a failure of the trace's writer, which speaks for itself)."""
    if isinstance(exc, OSError) or _class_names(exc) & (_UNREACHABLE | _NO_CREDENTIALS):
        return True
    return type(exc).__module__.split(".")[0] in _CLIENT_PACKAGES


def _write_error(url: str, exc: Exception) -> UsageError:
    if isinstance(exc, FileNotFoundError) or _error_code(exc) == "NoSuchBucket":
        return UsageError(f"cannot write {url}: the bucket {_bucket(url)} does not exist; create it, or check the URL"
                          f"{_endpoint_hint(url)}")
    return UsageError(f"cannot write {url}: {_reason(url, exc)}")


def _reason(url: str, exc: Exception) -> str:
    """What went wrong and what to do, for a failure that is not a missing object."""
    protocol = protocol_of(url) or ""
    credentials = _CREDENTIALS.get(protocol, "the store's credentials")
    names = _class_names(exc)
    if _error_code(exc) == "NoSuchBucket":
        return f"the bucket {_bucket(url)} does not exist; check the URL{_endpoint_hint(url)}"
    if names & _NO_CREDENTIALS:
        return f"no credentials found; set {credentials}"
    if isinstance(exc, PermissionError):
        return f"access denied ({_one_line(exc)}); check the credentials ({credentials}) and that they may use {_bucket(url)}"
    if names & _UNREACHABLE:
        endpoint = _ENDPOINT.get(protocol)
        return f"cannot reach the store ({_one_line(exc)}); check the network" + (f" and {endpoint}" if endpoint else "")
    return f"{_one_line(exc)}; check the URL and the store"


def _endpoint_hint(url: str) -> str:
    endpoint = _ENDPOINT.get(protocol_of(url) or "")
    return f" and the endpoint ({endpoint})" if endpoint else ""


def _bucket(url: str) -> str:
    match = _URL.fullmatch(url)
    return match.group(2).split("/")[0] if match else url


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _error_code(exc: BaseException) -> str | None:
    """The store's error code (``NoSuchBucket``) of the client error behind ``exc``, when there is one."""
    for error in (exc, exc.__cause__):
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if isinstance(code, str):
                return code
    return None


def _one_line(exc: BaseException) -> str:
    """The error's own words on one line, without a request's query string."""
    text = getattr(exc, "strerror", None) if isinstance(exc, OSError) and exc.strerror else str(exc)
    text = re.sub(r"\?[^\"'\s]*", "", " ".join(str(text or type(exc).__name__).split()))
    return text.rstrip(".")
