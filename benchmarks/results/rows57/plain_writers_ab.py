"""In-process A/B of the plain path's graph writers (rows57): the base tree's ``ir.Graph``
against this tree's, a graph with no held run, ``--size`` derived tensors: per row a source
(``add``), an op over it and a shared constant (``add``), a derived leaf (``add_leaves``) given
the op as its input (``set_input_each``), then every fourth row's derived moved to another op
(``set_inputs``). gc off.

    PYTHONPATH=. python3 plain_writers_ab.py --base BASE_TREE [--size N] [--rounds R]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import ir  # noqa: E402


def run(mod: Any, n: int) -> None:
    node, kind = mod.Node, mod.NodeKind
    graph = mod.Graph()
    graph.add(node("c", kind.OP, "full"))
    for i in range(n):
        graph.add(node(f"s{i}", kind.SOURCE))
        graph.add(node(f"%{i}", kind.OP, "mul", inputs=(f"s{i}", "c")))
    ids = [f"d{i}" for i in range(n)]
    graph.add_leaves([node(d, kind.DERIVED) for d in ids], ids)
    graph.set_input_each(ids, [f"%{i}" for i in range(n)])
    for i in range(0, n, 4):
        graph.set_inputs(ids[i], (f"s{i}",))


def main() -> None:
    args = ab_args(__doc__, 7)
    base = base_module(args.base, "derivgraph/compiler/ir.py")
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: run(base, args.size),
                                   "mine": lambda: run(ir, args.size)}))


if __name__ == "__main__":
    main()
