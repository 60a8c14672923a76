"""A tree's compiler loaded beside another's in one process, for the in-process A/B harnesses
under ``benchmarks/results/`` (``front46/build_ab.py``, ``infer50/infer_ab.py``): each tree is
imported whole under the name ``derivgraph`` and its modules set aside, so both sets live side
by side (each one's functions see its own globals).
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
from typing import Any


def load(tree: str, infer: bool = False) -> dict[str, Any]:
    """The tree's compiler entry points, its modules then removed from ``sys.modules``."""
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        bind = importlib.import_module("derivgraph.compiler.bind")
        build = importlib.import_module("derivgraph.compiler.build")
        stamp = importlib.import_module("derivgraph.compiler.stamp")
        params = importlib.import_module("derivgraph.compiler.stamp_params")
        scaling = importlib.import_module("derivgraph.tools.bench_scaling")
    finally:
        sys.path.remove(tree)
    times: dict[str, float] = {}
    phases = [(stamp.Stamper, "resolve_bound", "resolve/stamp"),
              (params.ParamStamper, "resolve", "resolve_params")]
    if infer:
        phases += [(build, "infer_shapes", "infer_shapes"),
                   (build, "_check_cycles", "check_cycles")]
    for owner, name, label in phases:
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args: Any, __fn: Any = fn, __label: str = label, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return __fn(*args, **kwargs)
            finally:
                times[__label] = times.get(__label, 0.0) + time.process_time() - start

        setattr(owner, name, timed)
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    return {"bind": bind, "build": build, "scaling": scaling, "times": times}
