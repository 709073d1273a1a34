"""The ``kubernetes`` package without its models: what the client needs of it, at a third of the memory.

The client uses the package for configuration, credentials and its connection pool (``Configuration``,
``ApiClient``, ``KubeConfigLoader``), never for its typed API. But ``kubernetes/__init__.py`` imports every API
group, ``kubernetes/client/__init__.py`` every API class and model, and ``api_client.py`` imports
``kubernetes.client.models``, whose ``__init__`` imports all ~800 models: 1,270 modules, ~51 MB of RSS and
~0.4 s before the first request (measured with kubernetes 35.0; a 50k-pod sync peaked at ~190 MB, of which
those modules were 30 MB). ``lighten`` makes those three packages lazy instead: each is registered as it would
be imported, with its real path, so that any of its modules imports as usual, but its ``__init__`` runs only
when something asks the package for a name that is not one of its modules (``kubernetes.client.CoreV1Api``,
``kubernetes.client.models.V1Pod``, ``kubernetes.__version__``). Nothing is lost: code in the same process that
uses the typed API gets it, one ``__init__`` later. The client's imports then cost ~442 modules and ~22 MB.

Only where nothing imported ``kubernetes`` yet (else the packages are already whole), and only where the
package has the layout described (else it is imported as usual).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import types
from typing import Any

LAZY_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.client.models")

CHEAP_NAMES = {"kubernetes.client": {"ApiClient": "api_client", "Configuration": "configuration"}}
"""Names of a lazy package that one of its modules provides: asking for them imports that module only."""

INIT_DUNDERS = frozenset({"__version__", "__project__", "__all__"})
"""The only dunder names the packages' ``__init__`` define."""

_lock = threading.RLock()  # completing one package may complete another (the root imports every part)


class _LazyPackage(types.ModuleType):
    """A package whose ``__init__`` has not run yet: a missing attribute is one of its modules, a cheap name,
    or else a reason to run the ``__init__`` (once; the module is an ordinary module from then on)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in INIT_DUNDERS:
            raise AttributeError(name)  # what tools probe any module for (``__wrapped__``, ``__loader__``, ...)
        found = _submodule(self, name)
        if found is not None:
            return found
        cheap = CHEAP_NAMES.get(self.__name__, {}).get(name)
        if cheap is not None:
            return getattr(importlib.import_module(f"{self.__name__}.{cheap}"), name)
        with _lock:
            if isinstance(self, _LazyPackage):  # not completed by another thread meanwhile
                _complete(self)
        return getattr(self, name)


def lighten() -> None:
    """Register the lazy packages, unless ``kubernetes`` is imported already or not laid out as expected."""
    with _lock:
        if "kubernetes" in sys.modules:
            return
        specs = _specs()
        if specs is None:
            return
        parent: types.ModuleType | None = None
        for name, spec in specs:
            module = importlib.util.module_from_spec(spec)
            module.__class__ = _LazyPackage
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, name.rsplit(".", 1)[1], module)
            parent = module


def _specs() -> list[tuple[str, importlib.machinery.ModuleSpec]] | None:
    """The lazy packages' specs, found as the import system would find them; None when one is missing."""
    found: list[tuple[str, importlib.machinery.ModuleSpec]] = []
    path: list[str] | None = None
    for name in LAZY_PACKAGES:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return None
        found.append((name, spec))
        path = list(spec.submodule_search_locations)
    return found


def _submodule(package: types.ModuleType, name: str) -> types.ModuleType | None:
    """``package.name`` when it is a module of the package (imported now if it was not), else None."""
    qualified = f"{package.__name__}.{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    if importlib.machinery.PathFinder.find_spec(qualified, list(package.__path__)) is None:
        return None
    return importlib.import_module(qualified)


def _complete(package: types.ModuleType) -> None:
    """Run the package's ``__init__`` (it imports what it lists; modules imported already are reused)."""
    package.__class__ = types.ModuleType
    try:
        assert package.__spec__ is not None and package.__spec__.loader is not None
        package.__spec__.loader.exec_module(package)
    except BaseException:
        package.__class__ = _LazyPackage
        raise
