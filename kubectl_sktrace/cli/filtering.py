"""The rules' flags, spelled once for ``export`` and ``transform``: ``--filters FILE``, ``-l/--selector``, ``--allow``,
``--deny`` and ``--default``; the rule file read here, its rules parsed by ``trace/rules``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

import click

from kubectl_sktrace.cli.completion import complete_files
from kubectl_sktrace.cli.options import typed_in_order
from kubectl_sktrace.errors import UsageError

if TYPE_CHECKING:
    from kubectl_sktrace.trace.filtering import RuleFilter
    from kubectl_sktrace.trace.rules import Rule

F = TypeVar("F", bound=Callable[..., Any])

RULES_HELP = (
    "A RULE is FIELD:VALUE terms, all of which must match: namespace:GLOB[,GLOB], name:GLOB[,GLOB], "
    "kind:Deployment or kind:apps/v1.Deployment, labels:SELECTOR (kubectl syntax)."
)


def rule_options(f: F) -> F:
    """The rules' flags; the first rule that matches an object decides, in the order: the file's, -l, then --allow
    and --deny as typed."""
    f = click.option("--default", "default", type=click.Choice(["allow", "deny"]), default=None,
                     help="What no rule matches gets (default: allow; deny with -n or --include-namespaces).")(f)
    f = click.option("--deny", "deny", multiple=True, metavar="RULE",
                     help="Leave out what RULE matches, unless an earlier rule decided; repeatable, in order with --allow.")(f)
    f = click.option("--allow", "allow", multiple=True, metavar="RULE",
                     help="Keep what RULE matches, unless an earlier rule decided; repeatable, in order with --deny. " + RULES_HELP)(f)
    f = click.option("-l", "--selector", "selector", metavar="SELECTOR",
                     help="Keep only objects whose labels match this kubectl label selector, as kubectl's -l.")(f)
    f = click.option("--filters", "filters_file", metavar="FILE", shell_complete=complete_files,
                     help="A YAML file of rules, asked first ('rules:' a list of 'allow:' or 'deny:' with the fields; 'default:').")(f)
    return f


def user_rules(*, filters_file: str | None, selector: str | None, allow: tuple[str, ...], deny: tuple[str, ...],
               default: str | None) -> tuple[tuple[Rule, ...], str | None]:
    """The user's rules in the order they are asked, and the default (``--default``, else the file's, else None)."""
    from kubectl_sktrace.trace.rules import ALLOW, DENY, parse_rule, parse_rules_file, selector_rule

    rules: list[Rule] = []
    file_default = None
    if filters_file is not None:
        file_rules, file_default = parse_rules_file(_load_yaml(filters_file), source=filters_file)
        rules += file_rules
    if selector is not None:
        rules.append(selector_rule(selector))
    flags = {"allow": ("--allow", ALLOW), "deny": ("--deny", DENY)}
    for name, text in typed_in_order(click.get_current_context(), {"allow": allow, "deny": deny}):
        origin, action = flags[name]
        rules.append(parse_rule(text, action=action, origin=origin))
    return tuple(rules), default or file_default


def transform_rules(*, filters_file: str | None, selector: str | None, allow: tuple[str, ...], deny: tuple[str, ...],
                    default: str | None) -> RuleFilter | None:
    """``transform``'s rules as a ``RuleFilter``, or None when none is given (the trace keeps every object)."""
    from kubectl_sktrace.trace.filtering import RuleFilter
    from kubectl_sktrace.trace.rules import ALLOW, RuleSet

    rules, rules_default = user_rules(filters_file=filters_file, selector=selector, allow=allow, deny=deny, default=default)
    if not rules and rules_default is None:
        return None
    return RuleFilter(RuleSet(rules=rules, default=rules_default or ALLOW, default_origin="--default" if rules_default else "default"))


def _load_yaml(path: str) -> Any:
    import yaml

    from kubectl_sktrace import safeyaml

    try:
        with open(path, encoding="utf-8") as file:
            return safeyaml.load(file.read(safeyaml.MAX_CHARS + 1))
    except FileNotFoundError:
        raise UsageError(f"--filters {path}: no such file; pass the path of a YAML rule file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--filters {path}: cannot read it ({getattr(exc, 'strerror', None) or exc}); pass a readable YAML file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = f" ({exc.problem})" if isinstance(exc, safeyaml.YamlLimit) else ""
        raise UsageError(f"--filters {path}: not valid YAML{where}{problem}; a rule file is 'rules:' with a list of allow: or deny: items") from None


def decisions_text(decisions: dict[str, Any]) -> str:
    """``export --dry-run``'s table: each rule in the order asked, what it decided, then what else was left out."""
    from kubectl_sktrace import render
    from kubectl_sktrace.plural import counted

    left = decisions["leftOut"]
    besides = [
        counted(left["clusterScoped"], "cluster-scoped object") + " (--include-cluster-scoped keeps them)" if left["clusterScoped"] else "",
        f"{left['ownedByDaemonSet']} owned by a DaemonSet" if left["ownedByDaemonSet"] else "",
        f"{left['ownedByExported']} owned by an exported object (which recreates them)" if left["ownedByExported"] else "",
        f"{left['deletedByTransform']} deleted by --transform" if left["deletedByTransform"] else "",
    ]
    lines = [
        f"Window {decisions['start']} .. {decisions['end']}: {counted(decisions['objectsRecorded'], 'object')} recorded, "
        f"{decisions['objectsExported']} would be exported. The first rule that matches an object decides:",
        render.render_table(decisions["rules"], "table", columns=["rule", "action", "from", "objects"]),
    ]
    if any(besides):
        lines.append("Also left out: " + ", ".join(part for part in besides if part) + ".")
    return "\n".join(lines)
