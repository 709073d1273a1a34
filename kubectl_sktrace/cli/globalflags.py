"""kubectl's global flags, wherever the user types them (docs/spec.md §2).

kubectl hands a plugin the words after its name exactly as typed, and kubectl users put global flags first:
``kubectl sktrace --context prod -n shop status``. click only knows a command's options after the command's
name, so ``hoist_global_flags`` moves the global flags typed before the command to just after it; the
command then parses them as its own. A command that has no use for one of them refuses it (``refusal``)
rather than ignoring it, and ``-n``/``-A`` go through one check (``namespace_scope``) on every command.

Pure: works on the list of words, never reads the environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from kubectl_sktrace.errors import UsageError


@dataclass(frozen=True)
class GlobalFlag:
    spellings: tuple[str, ...]  # the long form first
    takes_value: bool


GLOBAL_FLAGS = (
    GlobalFlag(("--kubeconfig",), takes_value=True),
    GlobalFlag(("--context",), takes_value=True),
    GlobalFlag(("--namespace", "-n"), takes_value=True),
    GlobalFlag(("--all-namespaces", "-A"), takes_value=False),
    GlobalFlag(("--cache",), takes_value=True),
)

# what a command that refuses a global flag does instead, so the refusal can say why the flag has no meaning
_WHAT_IT_READS = {
    "config": "it prints the default tracer config",
    "version": "it prints versions",
    "inspect": "it reads only the trace file",
    "validate": "it reads only the trace file",
    "transform": "it reads only the trace file",
    "demo": "it records its own built-in API server",
    "prune": "it prunes every namespace of the cache at once",
}


def _flag_of(word: str) -> tuple[GlobalFlag, bool] | None:
    """The global flag ``word`` starts, and whether its value is in the same word (``--context=x``, ``-nshop``)."""
    for flag in GLOBAL_FLAGS:
        for spelling in flag.spellings:
            if word == spelling:
                return flag, False
            if flag.takes_value and spelling.startswith("--") and word.startswith(spelling + "="):
                return flag, True
            if flag.takes_value and not spelling.startswith("--") and word.startswith(spelling) and len(word) > len(spelling):
                return flag, True
    return None


def hoist_global_flags(args: Sequence[str], *, commands: Collection[str]) -> list[str]:
    """``args`` with the global flags typed before the command name moved to just after it.

    Only flags up to the first word that is a command name move; anything else before it (``-v 6``, ``-h``,
    an unknown flag) stays where it is, for the group to parse or refuse. Without a command nothing moves.
    """
    words = list(args)
    moved: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in commands:
            return [*kept, word, *moved, *words[i + 1:]]
        if word == "--":
            break
        found = _flag_of(word)
        if found is None:
            kept.append(word)
            i += 1
            continue
        flag, joined = found
        width = 1 if joined or not flag.takes_value else 2
        moved.extend(words[i:i + width])
        i += width
    return words


def lacks_command(args: Sequence[str], *, commands: Collection[str]) -> bool:
    """Whether ``args`` hold global flags but no command to give them to (``kubectl sktrace --context prod``)."""
    return not any(word in commands for word in args) and any(_flag_of(word) is not None for word in args)


def global_spelling(option: str) -> str | None:
    """The long spelling of the global flag ``option`` names, or None when it names none."""
    found = _flag_of(option)
    return found[0].spellings[0] if found else None


def refusal(command: str, option: str) -> str:
    """The one line refusing a global flag on a command that does not take it."""
    flag = global_spelling(option) or option
    shown = f"{flag}" if flag == option else f"{option} ({flag})"
    why = _WHAT_IT_READS.get(command)
    because = f": {why}" if why else ""
    return f"{command} does not take {shown}{because}; leave the flag out"


def namespace_scope(*, namespace: str | None, all_namespaces: bool) -> str | None:
    """The one check of ``-n``/``-A`` on every command: the namespace chosen, or None for all namespaces."""
    if namespace is not None and all_namespaces:
        raise UsageError("-n/--namespace and -A/--all-namespaces contradict each other; pass one of them")
    if namespace is not None and not namespace.strip():
        raise UsageError("-n/--namespace needs a namespace name; pass -n NAME, or -A for all namespaces")
    return namespace
