"""Which compile and refill readers read the fields of a proven row's ``DerivedNode`` (rows57,
task 2: could they be held like ``HeldNode`` s, made on a field read?). Every ``DerivedNode``
that ``build._derived_columns`` makes is of a subclass counting each field read
(``__getattribute__``) and write (``__setattr__``) by caller; the rows of the template (the
first layer) are counted apart. Then: how many of the held-able rows a reader touches.

    PYTHONPATH=TREE python3 derived_readers.py [LAYERS] > derived_readers.txt
"""

from __future__ import annotations

import collections
import sys
from typing import Any

import torch

from derivgraph.compiler import build
from derivgraph.compiler.graph import DerivedNode
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

reads: collections.Counter[tuple[str, str, str]] = collections.Counter()
writes: collections.Counter[tuple[str, str, str]] = collections.Counter()
touched: dict[str, set[int]] = collections.defaultdict(set)  # caller -> ids of nodes read
_FIELDS = {"id", "bound", "decl", "owner_path", "input", "device", "params", "meta", "_kind",
           "kind", "where"}
_get = object.__getattribute__


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.endswith(("graph.py", "dataclasses.py",
                                                                  "derived_readers.py")) \
            and frame.f_code.co_name in ("__init__", "__post_init__", "kind", "where",
                                         "__getattribute__", "__setattr__"):
        frame = frame.f_back
    assert frame is not None
    return f"{frame.f_code.co_filename.split('/derivgraph/')[-1]}:{frame.f_code.co_name}"


class Counted(DerivedNode):
    """A ``DerivedNode`` counting its field reads and writes by caller."""

    def __getattribute__(self, name: str) -> Any:
        if name in _FIELDS and _get(self, "__dict__").get("_ready"):
            where = _caller()
            reads[(where, name, "")] += 1
            touched[where].add(id(self))
        return _get(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FIELDS and _get(self, "__dict__").get("_ready"):
            writes[(_caller(), name, "")] += 1
        object.__setattr__(self, name, value)


def _made(*args: Any) -> Counted:
    node = Counted(*args)
    object.__setattr__(node, "_ready", True)
    return node


build.DerivedNode = _made  # type: ignore[attr-defined,misc]


def report(name: str, rows: int) -> None:
    print(f"== {name}: {rows} held-able rows")
    for label, counter in (("reads", reads), ("writes", writes)):
        for (where, field, _), count in sorted(counter.items(), key=lambda kv: -kv[1]):
            if count >= rows // 2:
                print(f"  {label} {count:7d} {field:11s} {where}")
    print("  readers touching >= half the rows:",
          sorted(w for w, ids in touched.items() if len(ids) >= rows // 2))
    reads.clear(), writes.clear(), touched.clear()


layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
model = scaling_model(layers)
plan = compile_plan(model, [scaling_spec()])
report(f"scaling {layers} layers compile", 4 * layers)
with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)
plan.refill()
plan.refill(verify=True)
report(f"scaling {layers} layers refill + refill(verify)", 4 * layers)
