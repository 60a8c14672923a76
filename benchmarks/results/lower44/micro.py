"""In-process A/B of the functions this branch changed, on one 100k scaling plan (stamped).

Each base function comes from the base tree's module file loaded by path (its imports come
from this tree, so only the changed module body differs); base and this tree alternate
``--rounds`` times on the same inputs (results checked equal first); process seconds, medians.
Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/lower44/micro.py --base /tmp/base_lower44
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from derivgraph import adoption, planner
from derivgraph.compiler import codegen, lower, transaction
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import _prepare, compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--only", default="")
args = parser.parse_args()
BASE_FILES = {"flat": "compiler/flat", "transaction": "compiler/transaction",
              "lower": "compiler/lower", "adoption": "adoption", "codegen": "compiler/codegen"}
base = {}
for short, rel in BASE_FILES.items():  # each base file by path, under a name of its own
    found = importlib.util.spec_from_file_location(f"base_{short}",
                                                   f"{args.base}/derivgraph/{rel}.py")
    base[short] = sys.modules[found.name] = importlib.util.module_from_spec(found)
    found.loader.exec_module(base[short])
base["codegen"].flat = base["flat"]

spec = scaling_spec()
gc.disable()
with stamping(True):
    model0 = scaling_model(args.size // 4)
    plan0, values, _, _ = _prepare(model0, [spec], False, True)
    plan = compile_plan(scaling_model(args.size // 4), [spec])
owner_paths = {e.node.owner_path for e in plan.entries.values()}


def tx_facts(tx):
    return sorted((id(live), sorted(saved)) for live, saved in tx._dicts)


def step_facts(steps):
    return [(s.node, str(s.action), s.op, repr(s.args), repr(s.kwargs), s.input, s.target,
             s.scale, s.out_shape) for s in steps] + [
        (id(layer.table), [(repr(t.node), [m.node for m in made]) for t, made in layer.columns])
        for layer in steps.layers]


def planned_facts(planned):
    return [(e.id, id(e.storage), e.slot, e.adopted, type(x).__name__,
             x.data_ptr() if hasattr(x, "data_ptr") else repr(x)) for e, x in planned]


deps = plan.graph.source_deps()


def base_constant_entries():  # the base's _lower line
    return [n for n, e in plan.entries.items() if e.node.kind in planner.HELD_KINDS
            and e.node.input is not None and not deps[n]]


def mine_constant_entries():
    return [n for n, e in plan.entries.items()
            if not deps[n] and e.node.kind in planner.HELD_KINDS and e.node.input is not None]


cases = {
    "constant_entries": (base_constant_entries, mine_constant_entries, lambda c: c),
    "lower_steps": (lambda: base["lower"].lower_steps(plan.tensors),
                    lambda: lower.lower_steps(plan.tensors), step_facts),
    "adopt_or_allocate": (
        lambda: base["adoption"].adopt_or_allocate(plan0, values, PathReader(model0)),
        lambda: adoption.adopt_or_allocate(plan0, values, PathReader(model0)), planned_facts),
    "build_program (install)": (
        lambda: base["codegen"].build_program(plan.tensors, base["codegen"].Bindings(),
                                              plan.steps, "p"),
        lambda: codegen.build_program(plan.tensors, codegen.Bindings(), plan.steps, "p"),
        lambda prog: prog.source),
    "ModelTransaction": (
        lambda: base["transaction"].ModelTransaction(plan.model, owner_paths, []),
        lambda: transaction.ModelTransaction(plan.model, owner_paths, []), tx_facts),
}
for name, (run_base, run_mine, facts) in cases.items():
    if args.only and name not in args.only.split(","):
        continue
    if facts is not None:
        assert facts(run_base()) == facts(run_mine()), name
    times = {"base": [], "mine": []}
    for _ in range(args.rounds):
        for tag, fn in (("base", run_base), ("mine", run_mine)):
            start = time.process_time()
            fn()
            times[tag].append(time.process_time() - start)
    b, m = statistics.median(times["base"]), statistics.median(times["mine"])
    wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
    print(f"{name:24s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  "
          f"mine faster {wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
          f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
