"""An answer's bytes sent as both servers send them: status, content type and length, the extra headers, and no body
to a HEAD."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def send(handler: BaseHTTPRequestHandler, code: int, body: bytes, *, content_type: str = "application/json",
         headers: dict[str, str] | None = None) -> None:
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)
