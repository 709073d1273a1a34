"""``view``: the endpoints of a cache wired to the server, the address said, a browser opened, served until stopped.

The cache is checked once before the server listens (a missing file or a cache too old is the usual one-line error,
before any address is printed), then opened read-only again for each request: a request sees the cache as it is
then, a recorder may go on writing beside the view, and no connection is shared between the server's threads.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import tempfile
import webbrowser
from typing import IO, Any, Callable, Mapping

from kubectl_sktrace.model import CacheUrl
from kubectl_sktrace.store import Cache, open_cache_readonly, viewing
from kubectl_sktrace.view import api, exports
from kubectl_sktrace.view.figures import Windows
from kubectl_sktrace.view.rates import RateIndex
from kubectl_sktrace.view.server import Answer, Download, ViewServer

CONTENT_TYPES = {"sktrace": "application/octet-stream", "json": "application/json", "yaml": "application/yaml"}
SPOOL_BYTES = 16 << 20


def _download(cache: Cache, params: Mapping[str, str]) -> Download:
    """The trace of the window as ``export`` writes it, spooled to a temporary file beyond 16 MB and sent from there
    (the server closes it)."""
    request = exports.window_request(params)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    try:
        exports.write_window(cache, request, spool)
        cache.ensure_unchanged()  # a writer may have changed what was read
        size = spool.tell()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return Download(name=request.file_name, content_type=CONTENT_TYPES[request.fmt], stream=spool, size=size)


def rate_index(location: str | CacheUrl) -> RateIndex | None:
    """The rate index of the history at ``location`` as it ends now, to ``fill``: None when it holds no event, or keeps
    its counts per minute itself (schema 0010: every range is read from them)."""
    with open_cache_readonly(location) as cache:
        if viewing.has_rates(cache):
            return None
        first, last = viewing.first_and_last(cache)
    if first is None or last is None:
        return None
    return RateIndex(open_cache=lambda: open_cache_readonly(location), begin=first, end=last + 1)


def cache_api(location: str | CacheUrl, *, title: str, command_base: tuple[str, ...], index: RateIndex | None = None) -> dict[str, Answer]:
    """The endpoints over the cache at ``location``, each opening it read-only for its request; ``index``: the
    rates counted so far (else every range is counted by the database)."""
    def reading(read: Callable[[Cache, Mapping[str, str]], Any]) -> Answer:
        def answer(params: Mapping[str, str]) -> Any:
            with open_cache_readonly(location) as cache:
                return read(cache, params)
        return answer

    windows = Windows()
    return {
        "/api/overview": reading(lambda cache, _: api.overview(cache, title=title, command_base=command_base)),
        "/api/histogram": reading(lambda cache, params: api.histogram(cache, params, index=index)),
        "/api/window": reading(lambda cache, params: api.window(cache, params, command_base=command_base, index=index,
                                                                          windows=windows)),
        "/api/report": reading(lambda cache, params: api.report(cache, params, index=index)),
        "/api/decisions": reading(api.decisions),
        "/api/objects": reading(api.objects),
        "/api/objects-total": reading(api.objects_total),
        "/api/version": reading(api.version),
        "/api/status-change": reading(api.status_change),
        "/api/export": reading(_download),
    }


def check_cache(location: str | CacheUrl) -> None:
    """The errors a person should see before an address: the cache is absent, or not one of ours."""
    with open_cache_readonly(location):
        pass


def can_open_browser() -> bool:
    """Whether a graphical browser can open here: never over SSH without a display, where ``webbrowser`` would start
    a text browser in this terminal."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def machine_addresses(bound: str) -> list[str]:
    """The addresses other machines may reach a server bound to every address (0.0.0.0 or ::) at: this machine's
    own that are not loopback (by address, since the server refuses a Host header that names a name): the one its
    default route leaves from (a datagram socket connected, nothing sent), and those its name resolves to."""
    if bound not in ("0.0.0.0", "::", ""):
        return []  # the address printed is that one already
    family = socket.AF_INET6 if bound == "::" else socket.AF_INET
    found: set[str] = set()
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(("2001:db8::1" if family == socket.AF_INET6 else "203.0.113.1", 9))  # documentation addresses
            found.add(str(probe.getsockname()[0]))
    except OSError:
        pass
    try:
        found |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None, family, socket.SOCK_STREAM)}
    except OSError:
        pass
    return sorted(a for a in found if not ipaddress.ip_address(a.split("%")[0]).is_loopback)[:3]


def serve(server: ViewServer, *, what: str, open_browser: bool, out: IO[str] | None = None) -> None:
    """Say where, open a browser when asked and possible, and serve until ``server.stop`` (the CLI's Ctrl-C or SIGTERM)."""
    out = out or sys.stdout
    out.write(f"Viewing {what} at {server.url}\n")
    if server.address not in ("127.0.0.1", "::1", "localhost"):
        others = [f"http://{a if ':' not in a else f'[{a}]'}:{server.port}/#token={server.token}" for a in machine_addresses(server.address)]
        out.write(f"(listening on {server.address}:{server.port}" + (f"; from another machine: {', '.join(others)}" if others else "") + ")\n")
    if open_browser and can_open_browser():
        webbrowser.open(server.browser_url())  # a one-time code: the browser's command line is anyone's to read
    elif open_browser:
        out.write("No display here to open a browser in: open the address above (from another machine: "
                  f"ssh -L {server.port}:127.0.0.1:{server.port} THIS-HOST, then the same address).\n")
    out.write("Press Ctrl-C to stop.\n")
    out.flush()
    try:
        server.serve()
    finally:
        server.close()


