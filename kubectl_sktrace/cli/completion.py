"""Shell completion: kubectl's plugin completion protocol, and the value completers click's own uses.

kubectl (1.26 and later) completes ``kubectl sktrace <TAB>`` by running an executable named
``kubectl_complete-sktrace`` found on ``PATH`` with the words typed after ``sktrace``, the last one being the
word under completion (empty when a new word starts). It reads one candidate per line on stdout, a
``value<TAB>description`` line showing the description beside the value, and a last line ``:<directive>``
holding cobra's ShellCompDirective bits (``ShellCompDirective*`` below). Anything the executable writes on
stderr reaches the user's terminal in the middle of the prompt, and a non-zero exit drops every candidate,
so completing never prints an error and always exits 0: what cannot be completed (an unreadable
kubeconfig, a missing cache) completes to nothing.

Both protocols walk the same click command tree with click's own resolver (``ShellComplete``), so
subcommands, flags and choices come from the commands as they are defined; only the output format
differs. Values click cannot know come from the completers here, which the options of ``cli/options.py`` name as
``shell_complete=``: context names from the kubeconfig (kubectl's loading rules, ``--kubeconfig`` honoured),
namespaces from the cache (opened read-only: completion never creates or writes a cache), and file names
(left to the shell). The executable itself is ``cli.complete_main``, which hands this module the command tree.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import click
from click.shell_completion import CompletionItem, ShellComplete

from kubectl_sktrace.errors import SktraceError

# cobra's ShellCompDirective values (a bit set), as kubectl reads them from a plugin
DIRECTIVE_DEFAULT = 0  # the shell's default: complete file names when there is no candidate
DIRECTIVE_ERROR = 1
DIRECTIVE_NO_SPACE = 2
DIRECTIVE_NO_FILE_COMP = 4
DIRECTIVE_FILTER_FILE_EXT = 8
DIRECTIVE_FILTER_DIRS = 16
DIRECTIVE_KEEP_ORDER = 32


def context_names(*, kubeconfig: str | None, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The context names of the kubeconfig kubectl would read, sorted; none when it cannot be read."""
    from kubectl_sktrace.kube.kubeconfig import list_contexts

    try:
        return list_contexts(kubeconfig=kubeconfig, environ=environ)
    except SktraceError:
        return []


def namespace_names(*, cache: str | None, kubeconfig: str | None, context: str | None,
                    environ: Mapping[str, str] = os.environ) -> list[str]:
    """The namespaces the cache knows of (the one named by ``--cache``, else the context's default cache),
    read-only; none when there is no cache."""
    from kubectl_sktrace.kube.kubeconfig import resolve_cache_path
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.store.status import known_namespaces

    try:
        path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context, environ=environ)
        with open_cache_readonly(path) as opened:
            return known_namespaces(opened)
    except SktraceError:
        return []


def _matching(values: Sequence[str], incomplete: str) -> list[CompletionItem[str]]:
    return [CompletionItem(value) for value in values if value.startswith(incomplete)]


def _param(ctx: click.Context, name: str) -> Any:
    """An option already typed on the command line (on the subcommand, or before it on the group)."""
    here: click.Context | None = ctx
    while here is not None:
        value = here.params.get(name)
        if value:
            return value
        here = here.parent
    return None


def complete_contexts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """``--context``: the kubeconfig's contexts (``--kubeconfig`` when already given)."""
    return _matching(context_names(kubeconfig=_param(ctx, "kubeconfig")), incomplete)


def complete_namespaces(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """``-n/--namespace``: the namespaces of the cache that ``--cache``/``--context`` name."""
    names = namespace_names(cache=_param(ctx, "cache"), kubeconfig=_param(ctx, "kubeconfig"), context=_param(ctx, "context"))
    return _matching(names, incomplete)


def complete_files(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """A file path: the shell completes it."""
    return [CompletionItem(incomplete, type="file")]


def complete_trace_formats(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """``-o/--format`` of ``export`` and ``transform``: the trace's formats."""
    helps = {"sktrace": "SimKube's msgpack trace", "json": "the trace as JSON, for people", "yaml": "the trace as YAML, for people"}
    return [CompletionItem(value, help=text) for value, text in helps.items() if value.startswith(incomplete)]


def complete_summary_formats(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """``--summary``: the summary's formats."""
    return _matching(["table", "json", "yaml"], incomplete)


def complete_transforms(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """``--transform``: the built-in programs, and the ``*.skel`` files and the directories that start with what is typed."""
    import glob

    from kubectl_sktrace.trace.skel import BUILTINS

    items = [CompletionItem(name, help="the built-in program") for name in BUILTINS if name.startswith(incomplete)]
    for path in sorted(glob.glob(glob.escape(incomplete) + "*")):
        if os.path.isdir(path):
            items.append(CompletionItem(path + "/"))
        elif path.endswith(".skel"):
            items.append(CompletionItem(path))
    return items


def format_kubectl(items: Sequence[CompletionItem[str]]) -> str:
    """The lines kubectl reads from a plugin's completion executable: candidates, then ``:<directive>``.

    A file or directory item asks the shell to complete paths (no candidate, the default directive, or the
    directories filter); plain values are offered with their help as the description, and never file
    names besides them."""
    kinds = {item.type for item in items}
    if "file" in kinds:
        return f":{DIRECTIVE_DEFAULT}"
    if "dir" in kinds:
        return f":{DIRECTIVE_FILTER_DIRS}"
    lines = [f"{item.value}\t{_one_line(item.help)}" if item.help else str(item.value) for item in items]
    return "\n".join([*lines, f":{DIRECTIVE_NO_FILE_COMP}"])


def _one_line(text: str) -> str:
    return " ".join(text.split())


class KubectlComplete(ShellComplete):
    """kubectl's plugin completion protocol: the words come as arguments, the answer in cobra's format."""

    name = "kubectl"
    source_template = ""

    def __init__(self, cli: click.Command, words: Sequence[str]) -> None:
        super().__init__(cli, {}, "kubectl sktrace", "")
        self.words = list(words)

    def get_completion_args(self) -> tuple[list[str], str]:
        if not self.words:
            return [], ""
        return self.words[:-1], self.words[-1]

    def complete(self) -> str:
        args, incomplete = self.get_completion_args()
        return format_kubectl(self.get_completions(_global_value_first(args, self.cli), incomplete))


def _global_value_first(args: list[str], cli: click.Command) -> list[str]:
    """A global flag typed before the command (``kubectl sktrace --context <TAB>``) completes its values as it does
    after one: those words are read as ``status``'s, which takes every global flag (the command line hoists them so)."""
    from kubectl_sktrace.cli.globalflags import GLOBAL_FLAGS

    valued = {spelling for flag in GLOBAL_FLAGS if flag.takes_value for spelling in flag.spellings}
    commands = getattr(cli, "commands", {})
    if not args or args[-1] not in valued:
        return args
    i = 0
    while i < len(args):  # the words before the command: global flags, and the values of those that take one
        if args[i] in commands:
            return args
        i += 2 if args[i] in valued else 1
    return ["status", *args]


def kubectl_complete(cli: click.Command, words: Sequence[str]) -> str:
    """What ``kubectl_complete-sktrace WORDS...`` prints; only the directive when anything goes wrong."""
    try:
        return KubectlComplete(cli, words).complete()
    except Exception:  # a half-typed command line must never show an error in the middle of the prompt
        return f":{DIRECTIVE_NO_FILE_COMP}"
