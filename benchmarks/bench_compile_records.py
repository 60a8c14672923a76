"""What the per-tensor records of a compile alone cost on the scaling workload (a floor).

Today's plan keeps, per derived tensor of the scaling workload, one ``DerivedNode``, one IR
``Node`` (plus one per source and op: 200k at 100k derived), one ``Entry``, and per written
tensor one ``Step`` (50k); the graph's dicts index them. This builds exactly those records for
``--size`` derived tensors (no reads, no checks, no torch calls) and times each kind: the part
of any compile phase that constructs them, which no per-column decision removes while the plan
keeps one record per tensor. Process seconds, best of ``--repeat``.

    python3 benchmarks/bench_compile_records.py --size 100000 --json out.json
"""

from __future__ import annotations

import gc
import time
from typing import Any

from _compile_cli import compile_parser, emit

from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.graph import DerivedNode, NodeRef
from derivgraph.compiler.ir import Graph, Node, NodeKind
from derivgraph.compiler.lower import Action, Step
from derivgraph.paths import Slot
from derivgraph.runtime.entry import Entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _records(layers: int, times: dict[str, float]) -> None:
    spec = scaling_spec()
    model = scaling_model(1)
    bound = BoundSpec(spec, "layers.0", model.layers[0])
    decls = list(spec.derived)

    def timed(label: str, fn: Any) -> Any:
        start = time.process_time()
        out = fn()
        times[label] = min(times.get(label, 1e9), time.process_time() - start)
        return out

    derived = timed("DerivedNode x4/layer", lambda: [
        DerivedNode(f"layers.{i}.{d.name}", bound, d, f"layers.{i}") for i in range(layers)
        for d in decls])
    graph = Graph()

    def nodes() -> None:
        for i in range(layers):
            s, w = f"layers.{i}.scale", f"layers.{i}.weight"
            graph.add(Node(s, NodeKind.SOURCE, shape=(8,), stride=(1,)))
            graph.add(Node(w, NodeKind.SOURCE, shape=(8,), stride=(1,)))
            graph.add(Node(f"%{2 * i}:div", NodeKind.OP, op="div",
                           args=(1.0, NodeRef(s)), inputs=(s,)))
            graph.add(Node(f"%{2 * i + 1}:mul", NodeKind.OP, op="mul",
                           args=(NodeRef(s), NodeRef(w)), inputs=(s, w)))
        for node in derived:
            graph.add(Node(node.id, NodeKind.DERIVED))

    timed("IR Node x8/layer (graph.add)", nodes)
    timed("Entry x4/layer", lambda: [Entry(n, None, Slot.ATTRIBUTE, False) for n in derived])
    timed("Step x2/layer", lambda: [
        Step(f"layers.{i}.{name}", Action.OUT, op, (NodeRef(f"layers.{i}.scale"),), {},
             None, f"layers.{i}.{name}") for i in range(layers)
        for name, op in (("inv", "reciprocal"), ("prod", "mul"))])


def main() -> None:
    parser = compile_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    gc.disable()  # as compile_plan runs
    for _ in range(args.repeat):
        _records(max(1, args.size // 4), times)
    result = {"size": args.size, "records_s": {k: round(v, 4) for k, v in times.items()},
              "total_s": round(sum(times.values()), 4)}
    emit(result, args.json)


if __name__ == "__main__":
    main()
