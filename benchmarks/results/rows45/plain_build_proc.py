"""``build_graph`` of the scaling workload with stamping off, one build per process (collector
off, as compile_plan has it): process seconds, one JSON line.

    DERIVGRAPH_STAMP=0 PYTHONPATH=<tree> python plain_build_proc.py [--size 100000] --tag T
"""

from __future__ import annotations

import argparse
import gc
import json
import time

from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.stamp import stamping_enabled
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    assert not stamping_enabled()
    model = scaling_model(args.size // 4)
    bound = match_specs(model, [scaling_spec()])
    check_bindings(bound)
    gc.collect()
    gc.disable()
    start = time.process_time()
    graph = build_graph(model, bound)
    took = time.process_time() - start
    assert not graph.issues and graph.stamped == 0
    print(json.dumps({"tag": args.tag, "build_graph": round(took, 3)}))


if __name__ == "__main__":
    main()
