"""Python source the compiler writes (the pass, a template's replay), made into a function.

The source holds no spec text: every value a spec gave enters through the scope it runs in.
Its lines are registered with :mod:`linecache` under a unique name, so a traceback through it
shows them, until the function it defines is collected.
"""

from __future__ import annotations

import itertools
import linecache
import weakref
from typing import Any

__all__ = ["define"]

_SERIAL = itertools.count()


def define(src: str, label: str, scope: dict[str, Any], name: str) -> Any:
    """Run the generated ``src`` in ``scope`` (its globals) and return what it defines as
    ``name``; its lines are in :mod:`linecache` as ``<derivgraph LABEL #n>`` while that lives."""
    filename = f"<derivgraph {label} #{next(_SERIAL)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), scope)  # noqa: S102 - generated, no spec text
    defined = scope[name]
    weakref.finalize(defined, linecache.cache.pop, filename, None)
    return defined
