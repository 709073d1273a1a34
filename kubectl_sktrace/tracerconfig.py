"""The tracer config: SimKube's TracerConfig YAML, accepted unchanged, and normalized (docs/spec.md §3).

``parse_config`` turns the parsed YAML (or a trace's ``config`` map) into a frozen ``TracerConfig``; every
problem is a ConfigError of one line naming the source, the key and the fix. Normalization follows
SimKube: an entry with no options is ``{}``; the deprecated single ``podSpecTemplatePath`` is accepted
when ``podSpecTemplatePaths`` is absent; the seven known kinds get their built-in template paths, and
user paths for them must equal those; other kinds may list their own pointers, or none (a pod-less kind:
recorded and exported in events, but left out of an exported ``config`` because SimKube rejects an
entry without paths for a kind it does not know).

One extension key, ``keepSecretData: true`` (on ``v1.Secret`` only), opts in to storing Secret values;
without it the recorder blanks them. It is never written into an exported trace, and a trace's own config
may not carry it.

Pure: no I/O except ``load_config``, which reads the one file it is given.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Collection, Iterator, Mapping

import yaml

from kubectl_sktrace import safeyaml
from kubectl_sktrace.errors import ConfigError, UsageError
from kubectl_sktrace.model import (
    CRONJOB,
    DAEMONSET,
    DEPLOYMENT,
    GVK,
    JOB,
    OWNER_KINDS,
    POD,
    REPLICASET,
    SECRET,
    STATEFULSET,
)

KNOWN_TEMPLATE_PATHS: dict[GVK, tuple[str, ...]] = {
    CRONJOB: ("/spec/jobTemplate/spec/template",),
    DAEMONSET: ("/spec/template",),
    DEPLOYMENT: ("/spec/template",),
    JOB: ("/spec/template",),
    REPLICASET: ("/spec",),
    STATEFULSET: ("/spec/template",),
    POD: ("",),
}

_OPTION_KEYS = ("podSpecTemplatePaths", "podSpecTemplatePath", "trackLifecycle", "skipOwned", "keepSecretData")


@dataclass(frozen=True)
class TrackedObject:
    """Normalized options of one tracked kind; empty ``pod_spec_template_paths`` means a pod-less kind."""

    pod_spec_template_paths: tuple[str, ...] = ()
    track_lifecycle: bool = False
    skip_owned: bool = False
    keep_secret_data: bool = False


@dataclass(frozen=True)
class TracerConfig:
    """The kinds to track, in the order they were given. Hashable (over its items) though it holds a dict."""

    tracked: dict[GVK, TrackedObject]

    def __hash__(self) -> int:
        return hash(tuple(self.tracked.items()))

    def __iter__(self) -> Iterator[GVK]:
        return iter(self.tracked)

    def __contains__(self, gvk: object) -> bool:
        return gvk in self.tracked

    def get(self, gvk: GVK) -> TrackedObject | None:
        return self.tracked.get(gvk)

    @property
    def kinds(self) -> tuple[GVK, ...]:
        return tuple(self.tracked)

    @property
    def lifecycle_kinds(self) -> frozenset[GVK]:
        return frozenset(gvk for gvk, opts in self.tracked.items() if opts.track_lifecycle)


def default_config() -> TracerConfig:
    """Deployments, StatefulSets, Jobs and CronJobs, each with its built-in path and ``trackLifecycle``."""
    return TracerConfig(
        tracked={
            gvk: TrackedObject(pod_spec_template_paths=KNOWN_TEMPLATE_PATHS[gvk], track_lifecycle=True)
            for gvk in (DEPLOYMENT, STATEFULSET, JOB, CRONJOB)
        }
    )


def load_config(path: str) -> TracerConfig:
    """Read and normalize a TracerConfig YAML file."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read(safeyaml.MAX_CHARS + 1)  # past the bound: refused without reading the rest
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; check --config (print a starting point with 'kubectl sktrace config')") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read the config file: {getattr(exc, 'strerror', None) or exc}; pass a readable UTF-8 YAML file with --config"
        ) from None
    try:
        data = safeyaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}; fix the syntax") from None
    return parse_config(data, source=path)


def parse_config(data: object, *, source: str, from_trace: bool = False) -> TracerConfig:
    """Normalize a parsed TracerConfig; ``from_trace`` applies the stricter rules SimKube uses on import."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: the config must be a map with the key 'trackedObjects' (see 'kubectl sktrace config')")
    extra = [k for k in data if k != "trackedObjects"]
    if extra:
        raise ConfigError(f"{source}: unknown key {extra[0]!r}; the only top-level key is 'trackedObjects'")
    tracked = data.get("trackedObjects")
    if not isinstance(tracked, Mapping):
        raise ConfigError(f"{source}: 'trackedObjects' must be a map of GVK strings to options (see 'kubectl sktrace config')")
    if not tracked and not from_trace:
        raise ConfigError(f"{source}: 'trackedObjects' is empty; list at least one kind to track (see 'kubectl sktrace config')")
    result: dict[GVK, TrackedObject] = {}
    for key, options in tracked.items():
        where = f"{source}: trackedObjects.{key}"
        try:
            gvk = GVK.parse(key) if isinstance(key, str) else GVK.parse(str(key))
        except UsageError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if gvk in result:
            raise ConfigError(f"{where}: the kind {gvk} is listed twice; keep one entry")
        result[gvk] = _parse_options(gvk, options, where=where, from_trace=from_trace)
    return TracerConfig(tracked=result)


def _flag(options: Mapping[str, Any], key: str, where: str) -> bool:
    value = options.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key}: must be true or false, found {value!r}")
    return value


def _parse_options(gvk: GVK, options: object, *, where: str, from_trace: bool) -> TrackedObject:
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}: the options must be a map (use {{}} for none), found {options!r}")
    allowed = _OPTION_KEYS[:-1] if from_trace else _OPTION_KEYS
    for key in options:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed keys are {', '.join(allowed)}")
    paths = _template_paths(options, where=where)
    known = KNOWN_TEMPLATE_PATHS.get(gvk)
    if known is not None:
        if paths is not None and paths != known:
            shown = ", ".join(repr(p) for p in known)
            raise ConfigError(
                f"{where}.podSpecTemplatePaths: {gvk} has the built-in path {shown}; remove the key or set it to [{shown}]"
            )
        paths = known
    elif from_trace and not paths:
        raise ConfigError(f"{where}: {gvk} is not a kind SimKube knows, so it needs podSpecTemplatePaths")
    keep_secret = _flag(options, "keepSecretData", where)
    if keep_secret and gvk != SECRET:
        raise ConfigError(f"{where}.keepSecretData: only applies to {SECRET}; remove it here")
    return TrackedObject(
        pod_spec_template_paths=paths or (),
        track_lifecycle=_flag(options, "trackLifecycle", where),
        skip_owned=_flag(options, "skipOwned", where),
        keep_secret_data=keep_secret,
    )


def _template_paths(options: Mapping[str, Any], *, where: str) -> tuple[str, ...] | None:
    if "podSpecTemplatePaths" in options:
        if "podSpecTemplatePath" in options:
            raise ConfigError(f"{where}: both podSpecTemplatePaths and the deprecated podSpecTemplatePath are set; keep podSpecTemplatePaths")
        raw = options["podSpecTemplatePaths"]
        if raw is None:
            return None
        if not isinstance(raw, (list, tuple)) or not all(isinstance(p, str) for p in raw):
            raise ConfigError(f"{where}.podSpecTemplatePaths: must be a list of JSON pointers like ['/spec/template'], found {raw!r}")
        paths = tuple(raw)
        key = "podSpecTemplatePaths"
    elif "podSpecTemplatePath" in options:
        raw = options["podSpecTemplatePath"]
        if not isinstance(raw, str):
            raise ConfigError(f"{where}.podSpecTemplatePath: must be a JSON pointer string like '/spec/template' (better: use podSpecTemplatePaths: [...]), found {raw!r}")
        paths = (raw,)
        key = "podSpecTemplatePath"
    else:
        return None
    for pointer in paths:
        problem = pointer_problem(pointer)
        if problem:
            raise ConfigError(f"{where}.{key}: {pointer!r} is not a JSON pointer ({problem}); write it like '/spec/template'")
    return paths


def pointer_problem(pointer: str) -> str | None:
    """Why ``pointer`` is not an RFC 6901 JSON pointer, or None when it is one ("" is the whole object)."""
    if pointer == "":
        return None
    if not pointer.startswith("/"):
        return "it must be empty or start with '/'"
    for token in pointer[1:].split("/"):
        rest = token
        while "~" in rest:
            _, _, rest = rest.partition("~")
            if rest[:1] not in ("0", "1"):
                return "'~' must be followed by 0 or 1"
    return None


@functools.lru_cache(maxsize=256)
def _pointer_tokens(pointer: str) -> tuple[str, ...]:
    """A JSON pointer's unescaped tokens (a config has a handful of pointers, resolved for every object)."""
    if pointer == "":
        return ()
    return tuple(raw.replace("~1", "/").replace("~0", "~") for raw in pointer[1:].split("/"))


def resolve_pointer(document: Any, pointer: str) -> list[Any]:
    """Every value at ``pointer`` in ``document``; a ``*`` token matches each element of an array."""
    current = [document]
    for token in _pointer_tokens(pointer):
        found: list[Any] = []
        for value in current:
            if type(value) is dict or isinstance(value, Mapping):  # the exact type first: an ABC check costs ~10x
                if token in value:
                    found.append(value[token])
            elif isinstance(value, (list, tuple)):
                if token == "*":
                    found.extend(value)
                elif token.isdigit() and int(token) < len(value):
                    found.append(value[int(token)])
        current = found
    return current


def config_to_trace(cfg: TracerConfig) -> dict[str, Any]:
    """The ``config`` map of an exported trace: pod-less kinds left out, booleans only when true."""
    return {"trackedObjects": {
        str(gvk): _entry(cfg.tracked[gvk], ours=False)
        for gvk in sorted(cfg.tracked)  # SimKube writes its hash-map order; sorting makes exports reproducible
        if cfg.tracked[gvk].pod_spec_template_paths
    }}


def config_from_trace(data: dict[str, Any]) -> TracerConfig:
    """The config of a trace file, normalized with the rules SimKube applies when it loads a trace."""
    return parse_config(data, source="the trace's config", from_trace=True)


def watched_owner_kinds(cfg: TracerConfig, *, served: Collection[GVK] | None = None) -> set[GVK]:
    """The kinds the recorder watches besides the tracked ones: those between a tracked kind with lifecycles and
    its pods (ReplicaSets of Deployments, Jobs of CronJobs), for the pods' owner chains; ``served``: only among
    the kinds the cluster serves."""
    def ok(gvk: GVK) -> bool:
        return served is None or gvk in served

    return {OWNER_KINDS[g] for g, options in cfg.tracked.items() if g in OWNER_KINDS and options.track_lifecycle and ok(g)
            and ok(OWNER_KINDS[g]) and OWNER_KINDS[g] not in cfg.tracked}


def config_to_plain(cfg: TracerConfig) -> dict[str, Any]:
    """The normalized config as a YAML-ready map, every kind included (what the cache stores per run)."""
    return {"trackedObjects": {str(gvk): _entry(opts, ours=True) for gvk, opts in cfg.tracked.items()}}


def _entry(opts: TrackedObject, *, ours: bool) -> dict[str, Any]:
    """One kind's options as written: what is set, booleans only when true. ``keepSecretData`` is this tool's
    own option (``ours``), never written into a trace SimKube reads."""
    entry: dict[str, Any] = {}
    if opts.pod_spec_template_paths:
        entry["podSpecTemplatePaths"] = list(opts.pod_spec_template_paths)
    if opts.track_lifecycle:
        entry["trackLifecycle"] = True
    if opts.skip_owned:
        entry["skipOwned"] = True
    if ours and opts.keep_secret_data:
        entry["keepSecretData"] = True
    return entry


CONFIG_HEADER = """\
# kubectl sktrace tracer config (SimKube's TracerConfig format). Use it with:
#   kubectl sktrace start --config FILE
# trackedObjects maps a GVK ("<group>/<version>.<Kind>", core kinds "v1.<Kind>") to its options:
#   podSpecTemplatePaths: JSON pointers to the pod templates ("*" matches every array element); built in
#                         for Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob and v1.Pod,
#                         needed for other kinds that own pods; kinds without pods may be tracked too
#   trackLifecycle: true  record the start and end times of the pods these objects own
#   skipOwned: true       ignore objects of this kind that have ownerReferences
#   keepSecretData: true  (v1.Secret only, a kubectl-sktrace extension) keep Secret values, which are
#                         otherwise blanked; never written into exported traces
"""


def config_to_yaml(cfg: TracerConfig) -> str:
    """What ``kubectl sktrace config`` prints: a commented header and the normalized config."""
    body: str = yaml.safe_dump(config_to_plain(cfg), sort_keys=False, default_flow_style=False)
    return CONFIG_HEADER + body


def stored_config(text: str | None) -> TracerConfig | None:
    """The config a run stored (YAML text), or None when it holds none that can be read."""
    if not text:
        return None
    try:
        return parse_config(safeyaml.load(text), source="the stored tracer config")
    except (yaml.YAMLError, UsageError):
        return None


@dataclass(frozen=True)
class ConfigChange:
    """What one config changes against the one before it: kinds added, dropped, or tracked with other options."""

    added: tuple[GVK, ...]
    dropped: tuple[GVK, ...]
    changed: tuple[GVK, ...]

    def __bool__(self) -> bool:
        return bool(self.added or self.dropped or self.changed)

    def describe(self) -> str:
        parts = [f"{verb} {', '.join(str(g) for g in kinds)}"
                 for verb, kinds in (("added", self.added), ("dropped", self.dropped), ("changed", self.changed)) if kinds]
        return "; ".join(parts) or "-"


def config_change(before: TracerConfig, after: TracerConfig) -> ConfigChange:
    """What ``after`` changes against ``before``. A changed kind (other paths, lifecycles, skipOwned) ends its
    history under the old options and starts a new one, like a kind dropped and added. Pure."""
    def ordered(kinds: Iterator[GVK]) -> tuple[GVK, ...]:
        return tuple(sorted(kinds, key=str))

    return ConfigChange(
        added=ordered(g for g in after.tracked if g not in before.tracked),
        dropped=ordered(g for g in before.tracked if g not in after.tracked),
        changed=ordered(g for g, options in before.tracked.items() if g in after.tracked and after.tracked[g] != options),
    )


def choose_config(*, given: TracerConfig | None, given_path: str | None, stored: str | None, run_id: int | None,
                  drop_kinds: bool) -> tuple[TracerConfig, str | None]:
    """The config a run records with, and the note that says which: ``--config`` when given, else the config of the
    cache's last run (``stored``, run ``run_id``), else the default. A given config that stops tracking a kind the
    last run tracked is refused unless ``drop_kinds``: a recorder restarted by hand must not lose a kind unasked. Pure."""
    before = stored_config(stored)
    if given is None:
        if before is None:
            return default_config(), None
        tracked = ", ".join(str(g) for g in before.tracked)
        return before, f"no --config: recording with the tracer config of the cache's last run (run {run_id}): {tracked}"
    dropped = [] if before is None else list(config_change(before, given).dropped)
    if dropped and not drop_kinds:
        kinds = [str(g) for g in dropped]
        names = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"
        raise UsageError(
            f"--config {given_path} does not track {names}, which the cache's last run (run {run_id}) tracked: "
            f"add {'it' if len(dropped) == 1 else 'them'} to {given_path}, or pass --drop-kinds to stop recording "
            f"{'it' if len(dropped) == 1 else 'them'} (the history recorded so far is kept)"
        )
    return given, None
