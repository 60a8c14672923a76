"""Run a callback right after a named module finishes importing (a post-import hook).

The plugin must patch vLLM functions where they are defined *and* where other modules bound
them by name, without importing those (heavy) modules itself. A :class:`PostImportHook` sits
first on ``sys.meta_path``: for a watched module name it lets the normal finders locate the
module, then wraps the loader's ``exec_module`` so that the callback sees the module as soon
as its body ran — before the importing ``from x import f`` statement reads ``x.f``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["PostImportHook"]

logger = logging.getLogger(__name__)


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader; calls ``callback(module)`` after ``exec_module``."""

    def __init__(self, inner: Any, callback: Callable[[ModuleType], None]):
        self._inner = inner
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resource readers...
        if name == "_inner":  # not initialized (copied or unpickled): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)


class PostImportHook(importlib.abc.MetaPathFinder):
    """A meta-path finder that reports watched modules once they are imported."""

    def __init__(self, names: Iterable[str], callback: Callable[[ModuleType], None]):
        self.names = frozenset(names)
        self.callback = callback
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        busy: set[str] = getattr(self._busy, "names", None) or set()
        if fullname in busy:  # our own lookup below: let the real finders answer
            return None
        self._busy.names = busy | {fullname}
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.names = busy
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.callback)
        return spec

    def install(self) -> None:
        """Put the hook first on ``sys.meta_path`` (once)."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self) -> None:
        """Take the hook off ``sys.meta_path``; modules already patched stay patched."""
        while self in sys.meta_path:
            sys.meta_path.remove(self)
