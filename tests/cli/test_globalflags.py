"""kubectl's global flags before the command: which words move, and the one -n/-A check."""

from __future__ import annotations

import pytest

from kubectl_sktrace.cli.globalflags import (
    global_spelling,
    hoist_global_flags,
    lacks_command,
    namespace_scope,
    refusal,
)
from kubectl_sktrace.errors import UsageError

COMMANDS = {"status", "export", "inspect", "start"}


@pytest.mark.parametrize(
    ("args", "hoisted"),
    [
        pytest.param(["status"], ["status"], id="bare-command"),
        pytest.param(["--kubeconfig", "k", "--context", "c", "-n", "ns", "status", "-o", "json"],
                     ["status", "--kubeconfig", "k", "--context", "c", "-n", "ns", "-o", "json"], id="all-before"),
        pytest.param(["--context=c", "-nns", "-A", "export", "-s", "-1h"], ["export", "--context=c", "-nns", "-A", "-s", "-1h"],
                     id="joined-values-and-a-flag"),
        pytest.param(["-v", "6", "--cache", "c.db", "status"], ["-v", "6", "status", "--cache", "c.db"], id="group-option-stays"),
        pytest.param(["--context", "status", "export"], ["export", "--context", "status"], id="value-named-like-a-command"),
        pytest.param(["--kubeconfig", "k"], ["--kubeconfig", "k"], id="no-command"),
        pytest.param(["--bogus", "status", "-n", "x"], ["--bogus", "status", "-n", "x"], id="unknown-flag-left-to-click"),
        pytest.param(["status", "--", "-n"], ["status", "--", "-n"], id="after-the-command-untouched"),
        pytest.param(["-n", "x", "--", "status"], ["-n", "x", "--", "status"], id="double-dash-stops"),
    ],
)
def test_hoist_global_flags(args: list[str], hoisted: list[str]) -> None:
    assert hoist_global_flags(args, commands=COMMANDS) == hoisted


@pytest.mark.parametrize(
    ("args", "lacking"),
    [(["--context", "c"], True), (["-A"], True), (["--context", "c", "status"], False), (["-v", "6"], False), ([], False)],
)
def test_lacks_command(args: list[str], lacking: bool) -> None:
    assert lacks_command(args, commands=COMMANDS) is lacking


@pytest.mark.parametrize(
    ("option", "spelling"),
    [("-n", "--namespace"), ("--namespace", "--namespace"), ("-A", "--all-namespaces"), ("--cache", "--cache"), ("-o", None),
     ("--kubeconfig", "--kubeconfig")],
)
def test_global_spelling(option: str, spelling: str | None) -> None:
    assert global_spelling(option) == spelling


def test_refusal_names_the_flag_and_why() -> None:
    assert refusal("inspect", "-n") == "inspect does not take -n (--namespace): it reads only the trace file; leave the flag out"
    assert refusal("rbac", "--cache") == "rbac does not take --cache; leave the flag out"


@pytest.mark.parametrize(
    ("namespace", "all_namespaces", "scope", "error"),
    [
        pytest.param(None, False, None, None, id="neither"),
        pytest.param("shop", False, "shop", None, id="one-namespace"),
        pytest.param(None, True, None, None, id="all"),
        pytest.param("shop", True, None, "-n/--namespace and -A/--all-namespaces contradict each other; pass one of them", id="both"),
        pytest.param(" ", False, None, "-n/--namespace needs a namespace name; pass -n NAME, or -A for all namespaces", id="blank"),
    ],
)
def test_namespace_scope(namespace: str | None, all_namespaces: bool, scope: str | None, error: str | None) -> None:
    if error is None:
        assert namespace_scope(namespace=namespace, all_namespaces=all_namespaces) == scope
    else:
        with pytest.raises(UsageError) as info:
            namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
        assert str(info.value) == error
