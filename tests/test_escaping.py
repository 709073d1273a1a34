"""What reaches a terminal is text, never a command to it: names, messages and log lines that a cluster or a trace
chose are printed with their control characters made visible (``terminal.escape``), the way a user reads them, in
the commands' own processes; what is printed for programs (JSON, YAML) keeps its own escaping and its values."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from conftest import CacheBuilder, obj
from reliability_support import DATA, run_cli

from kubectl_sktrace.cli.options import configure_logging
from kubectl_sktrace.terminal import escape

OSC_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"  # sets the clipboard, in many terminals
HOSTILE = f"evil{OSC_CLIPBOARD}\x1b]0;TITLE\x07\r\u202ex\x9b2J"
VISIBLE = "evil\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07\\x1b]0;TITLE\\x07\\x0d\\u202ex\\x9b2J"
UNSAFE = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]] + ["\u202e", "\u2066", "\u200f"]


@pytest.mark.parametrize(("text", "shown"), [
    (HOSTILE, VISIBLE),
    ("plain\ttext\nand more: ünïcode, 日本, emoji 🙂", "plain\ttext\nand more: ünïcode, 日本, emoji 🙂"),
    ("\\x1b already visible", "\\x1b already visible"),
], ids=["hostile", "kept", "idempotent"])
def test_escape(text: str, shown: str) -> None:
    assert escape(text) == shown and escape(shown) == shown


def test_every_unsafe_character_is_made_visible() -> None:
    assert [c for c in UNSAFE if c in escape("".join(UNSAFE))] == []


def _renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {_renamed(k, old, new): _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_renamed(v, old, new) for v in value)
    return value


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CronJob fixture, its name (in its events, index and lifecycles) made of terminal commands."""
    data = msgpack.unpackb((DATA / "cronjob.sktrace").read_bytes(), raw=False, strict_map_key=False, use_list=False)
    path = tmp_path_factory.mktemp("hostile") / "hostile.sktrace"
    path.write_bytes(msgpack.packb(_renamed(data, "hello-simkube", HOSTILE)))
    return path


def _strings(value: Any) -> str:
    """Every string of a JSON value, joined."""
    if isinstance(value, dict):
        return "\n".join(_strings(k) + "\n" + _strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return value if isinstance(value, str) else ""


def _clean(text: str) -> bool:
    return not any(c in text for c in UNSAFE)


@pytest.mark.slow  # the console script, run
def test_a_trace_s_hostile_name_is_printed_visible_and_kept_in_json(tmp_path: Path, hostile_trace: Path) -> None:
    shown = run_cli(["inspect", str(hostile_trace)], home=tmp_path)
    assert shown.code == 0 and VISIBLE in shown.stdout and _clean(shown.stdout + shown.stderr)
    as_json = run_cli(["inspect", str(hostile_trace), "-o", "json"], home=tmp_path)  # JSON's own escapes, its values kept
    assert as_json.code == 0 and _clean(as_json.stdout) and HOSTILE in _strings(json.loads(as_json.stdout))
    timeline = run_cli(["inspect", str(hostile_trace), "--timeline"], home=tmp_path)
    assert timeline.code == 0 and "evil\\x1b]52" in timeline.stdout and _clean(timeline.stdout), timeline.stdout


@pytest.mark.slow  # the console script, run
def test_a_recorded_hostile_name_and_an_error_that_quotes_a_file_are_printed_visible(tmp_path: Path) -> None:
    cache = tmp_path / "cache.db"
    b, now = CacheBuilder(cache), int(time.time())
    try:
        b.run(started=now - 900, stopped=now - 60)
        b.apply(now - 800, obj("Deployment", HOSTILE, "shop", spec={"replicas": 1}))
        b.apply(now - 700, obj("Deployment", HOSTILE, "shop", spec={"replicas": 2}))
    finally:
        b.close()
    status = run_cli(["status", "--cache", str(cache), "--timeline"], home=tmp_path)
    assert status.code == 0 and "evil\\x1b]52" in status.stdout and _clean(status.stdout + status.stderr)
    error = run_cli(["inspect", str(tmp_path / f"missing{OSC_CLIPBOARD}.sktrace")], home=tmp_path)
    assert error.code == 1 and "missing\\x1b]52;c;" in error.stderr and _clean(error.stderr)


def test_a_log_line_carrying_what_a_cluster_said_is_printed_visible(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(0)
    try:
        logging.getLogger("kubectl_sktrace.kube.watch").warning("watch of pods failed: %s", HOSTILE)
    finally:
        configure_logging(0)
    assert capsys.readouterr().err == f"Warning: watch of pods failed: {VISIBLE}\n"
