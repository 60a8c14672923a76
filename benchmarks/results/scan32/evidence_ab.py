"""In-process A/B of the two phases scan32 changes: one scan of vLLM 0.33.0 captures the
arguments of ``apply_evidence`` and ``tree_facts``; then each phase runs N times per variant,
alternating base/this, with jobs=2, timing CPU (user+sys of this process and its forked
workers, from getrusage). Variant ``base`` runs ba2b206's ``evidence.apply_evidence`` (with its
``_judge_all``), ``bound_classes.bound_classes`` and ``tree_facts.tree_facts``, their source
executed from the base tree (/tmp/base_scan32) over this tree's other modules; ``this`` runs this
tree's. Checks both variants give the same findings and the same facts. From the worktree root:
    python3 benchmarks/results/scan32/evidence_ab.py 6 > benchmarks/results/scan32/evidence_ab.txt
"""
import os
import resource
import statistics
import sys
import time
import types

sys.path.insert(0, os.getcwd())
import derivgraph.audit.static.bound_classes as bc  # noqa: E402
import derivgraph.audit.static.evidence as ev  # noqa: E402
import derivgraph.audit.static.scan as sc  # noqa: E402
import derivgraph.audit.static.selection as sel  # noqa: E402
import derivgraph.audit.static.tree_facts as tf  # noqa: E402


def load_base(name: str) -> types.ModuleType:
    mod = types.ModuleType(f"base_{name}")
    sys.modules[mod.__name__] = mod  # its classes pickle (results of forked workers) by name
    path = f"/tmp/base_scan32/derivgraph/audit/static/{name}.py"
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    return mod


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


base_ev, base_bc, base_tf = (load_base("evidence"), load_base("bound_classes"),
                              load_base("tree_facts"))
this_ev = ev.apply_evidence
VARIANTS = {"base": (base_ev.apply_evidence, base_bc.bound_classes, base_tf.tree_facts),
            "this": (this_ev, bc.bound_classes, tf.tree_facts)}
cap: dict = {}


def grab(name, real):
    def call(*a, **k):
        cap[name] = (a, k)
        return real(*a, **k)
    return call


sc.apply_evidence, sc.tree_facts = grab("evidence", this_ev), grab("facts", tf.tree_facts)
sc.scan(package="vllm", jobs=2)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for phase in ("facts", "evidence"):
    res: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    outs: dict[str, str] = {}
    a, k = cap[phase]
    for i in range(n):
        for v, (apply_evidence, bound, facts) in VARIANTS.items():
            sel.bound_classes = bound
            run = facts if phase == "facts" else apply_evidence
            load = os.getloadavg()[0]
            t, w = cpu(), time.perf_counter()
            with sc.young_collections_only():
                out = run(*a, **{**k, "jobs": 2}) if phase == "evidence" else run(a[0], 2)
            res[v].append((cpu() - t, time.perf_counter() - w))
            outs.setdefault(v, repr(out))
            print(f"{phase} {v} run={i} load={load:.2f} cpu={res[v][-1][0]:.2f} "
                  f"wall={res[v][-1][1]:.2f}", flush=True)
    print(f"{phase}: same output:", outs["base"] == outs["this"])
    for v in VARIANTS:
        print(f"{phase} {v}: median cpu {statistics.median(c for c, _ in res[v]):.2f} s, "
              f"median wall {statistics.median(w for _, w in res[v]):.2f} s")
    diffs = [b[0] - t[0] for b, t in zip(res["base"], res["this"])]
    print(f"{phase} per-pair cpu base-this:", " ".join(f"{d:+.2f}" for d in diffs),
          f"median {statistics.median(diffs):+.2f}", flush=True)
