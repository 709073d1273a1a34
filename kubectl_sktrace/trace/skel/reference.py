"""The SKEL language's reference, as ``transform --help-skel`` prints it: every install has it (a pipx or krew user
has no docs/ directory). The same text as docs/spec.md's SKEL section, without its markup."""

REFERENCE = """\
SKEL: SimKube's trace transformation language (skctl transform), as kubectl sktrace reads it.

A file is commands, each ending with ';'; # comments run to the end of the line;
whitespace is free between tokens and absent inside a path.

- delete(SELECTOR), remove(SELECTOR, PATH), modify(SELECTOR, PATH = VALUE); remove(PATH) and
  modify(PATH = VALUE) apply to every object, as does the selector * (which stands alone).
- A selector is tests joined by &&: PATH OP VALUE with ==, !=, <, <=, >, >=;
  exists(PATH), !exists(PATH); $x := PATH | TEST, a test on $x that binds it; @t OP TIME.
- A path: fields joined by ., a part in double quotes for keys with . or /
  (metadata.labels."simkube.dev/team"), [N], [*] (every element of a list), and $x at its head
  only. .0 and [0] are the same JSON-pointer token: an element of a list, the key "0" of a map.
- A value: an integer (-5 included), a string in double quotes (no escapes: it runs to the next "),
  true/false in any case, or a path (read from the object; $x.… from each element $x is bound to).
- A time: unix seconds (@t >= 1764590400), or s, m, h after the trace's start (@t > 5m).
- Variables: each is defined once per command. The test after | is on the variable it defines; no
  other test has a variable on its left. A later test (its right side, or another definition:
  $s := $v.projected.sources[*] | …) and the action's path may use a variable defined before.

Semantics (SimKube's). Each command, in file order, applies to every object of applied_objs and
deleted_objs. A matched delete drops the object, so later commands do not see it; an event left with no
object is dropped. remove removes what its path reaches; modify replaces it, or adds it and its missing
parents (maps; a list where [0] follows). A path starting with $x applies from each element $x is
bound to. With [*], a test holds when any value reached holds: equal to a value of the right side (==),
different from all of them (!=), ordered against one. Equality is exact JSON: 1 is neither 1.0 nor
true. A field that is missing holds for neither == nor !=. $x := PATH | TEST binds $x to each
element of PATH for which TEST holds, in document order. modify needs exactly one value on its right,
read before anything is written; otherwise it fails. A command that cannot apply stops the transform with
FILE:LINE: COMMAND cannot apply to KIND NAMESPACE/NAME: WHY (its right side gives 2 values; a field
inside a string; an index past a list's end). A syntax error is FILE:LINE:COLUMN: expected … but found …
in "THE LINE".

Examples:
  # drop the canary Deployments, and every object's status
  delete(kind == "Deployment" && metadata.labels.track == "canary");
  remove(status);
  # scale every Deployment of the shop to 3 replicas after the first 5 minutes
  modify(kind == "Deployment" && metadata.namespace == "shop" && @t > 5m, spec.replicas = 3);
  # the volumes that mount a ConfigMap, from every pod template
  remove($v := spec.template.spec.volumes[*] | exists($v.configMap), $v);

The built-in program 'sanitize' removes status, service accounts, and the ConfigMap and Secret references
(env, envFrom, volumes and their mounts) of every pod template, as SimKube's examples/sanitize.skel does.
"""
