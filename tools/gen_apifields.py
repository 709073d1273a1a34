"""Write ``kubectl_sktrace/trace/anonymizing/apifields.json``: the field names and types of Kubernetes' built-in API types, as the
installed ``kubernetes`` package's models declare them (``openapi_types`` and ``attribute_map`` of each class in
``kubernetes.client.models``), for ``--anonymize``'s allow-list (``trace/anonymizing/apischema.py``).

    .venv/bin/python tools/gen_apifields.py            # rewrite the file
    .venv/bin/python tools/gen_apifields.py --check    # exit 1 when the file differs from what the package gives

The product reads the shipped file, never the package's models: importing 700 model classes would cost the
recorder's start a second, and only ``kube/client.py`` may import ``kubernetes``.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parent.parent / "kubectl_sktrace" / "trace" / "anonymizing" / "apifields.json"
_KIND_CLASS = re.compile(r"(?P<group>[A-Z][a-z]+)?(?P<version>V\d+(?:alpha\d+|beta\d+)?)(?P<kind>[A-Z]\w*)\Z")


def generate() -> dict[str, Any]:
    import kubernetes
    from kubernetes.client import models

    types: dict[str, dict[str, str]] = {}
    kinds: dict[str, str] = {}
    for name, cls in sorted(inspect.getmembers(models, inspect.isclass)):
        if not hasattr(cls, "openapi_types") or not hasattr(cls, "attribute_map"):
            continue
        fields = {cls.attribute_map[attr]: cls.openapi_types[attr] for attr in cls.openapi_types}
        types[name] = dict(sorted(fields.items()))
        match = _KIND_CLASS.match(name)
        if match and {"apiVersion", "kind", "metadata"} <= fields.keys() and not match["kind"].endswith("List"):
            key = f"{match['version'].lower()}.{match['kind']}"
            if match["group"] is None or key not in kinds:  # CoreV1Event over EventsV1Event: a group prefix marks the rarer one
                kinds[key] = name
    return {"kubernetes": kubernetes.__version__, "kinds": dict(sorted(kinds.items())), "types": types}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> int:
    text = render(generate())
    if sys.argv[1:] == ["--check"]:
        same = TARGET.exists() and TARGET.read_text(encoding="utf-8") == text
        print(f"{TARGET}: {'up to date' if same else 'differs from the installed kubernetes package; rerun without --check'}")
        return 0 if same else 1
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text) // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
