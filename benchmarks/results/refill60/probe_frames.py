"""In situ, one process: ``plan.refill(verify=True)`` on the tiny vLLM Llama (refill mode, right
after vLLM's reload, so cold) with this tree's refill-path methods (``mine``) and with the base
tree's versions of the same methods (``base``: read from BASE's source files and swapped in for
that reload), alternating per reload. Thread CPU clock. Prints min / q25 / median per arm and
the per-pair difference (mine - base, each pair two consecutive reloads).

    PYTHONPATH=$TREE python3 benchmarks/results/refill60/probe_frames.py BASE [reloads]
"""

import __future__

import ast
import gc
import logging
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.runtime import accessors, holders, storage  # noqa: E402
from derivgraph.runtime import plan as plan_module  # noqa: E402
from vllm_integration import session  # noqa: E402

#: (module, class, method) swapped per arm
METHODS = [
    (holders, "Holders", "_scalars_current"), (holders, "Holders", "_rebind_stale"),
    (holders, "Holders", "_sources_held"), (storage, "BoundTensors", "staged_if_changed"),
    (storage, "BoundTensors", "_rows_of"),
    (plan_module, "Plan", "rebind"), (accessors, "HopTable", "settle"),
    (accessors, "HopTable", "refresh"), (accessors, "HolderTable", "settle"),
]


def base_method(base: Path, module, cls: str, name: str):  # noqa: ANN001, ANN201
    """The base tree's ``cls.name``, compiled in ``module``'s namespace."""
    path = base / Path(module.__file__).relative_to(Path(module.__file__).parents[2])
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    src = textwrap.dedent(ast.get_source_segment(text, item))
                    code = compile(src, str(path), "exec", dont_inherit=True,
                                   flags=__future__.annotations.compiler_flag)
                    space: dict = {}
                    exec(code, module.__dict__, space)  # noqa: S102 - the base's own source
                    return space[name]
    raise SystemExit(f"{cls}.{name} not in {path}")


def main() -> None:
    base = Path(sys.argv[1])
    reloads = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    arms = {"mine": [getattr(getattr(m, c), n) for m, c, n in METHODS],
            "base": [base_method(base, m, c, n) for m, c, n in METHODS]}

    caches: dict[str, dict] = {"mine": {}, "base": {}}  # each arm's stage rows (own format)
    held: list = []

    def use(arm: str) -> None:
        for (m, c, n), fn in zip(METHODS, arms[arm]):
            setattr(getattr(m, c), n, fn)
        if held:
            held[0].tensors._stage_rows = caches[arm]

    clock = time.thread_time_ns
    times: dict[str, list[int]] = {"mine": [], "base": []}
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        plan = session.state_for(model).plan
        held.append(plan)
        refill = plan.refill
        arm = "mine"

        def timed(**kwargs):  # noqa: ANN003, ANN202
            t = clock()
            out = refill(**kwargs)
            times[arm].append(clock() - t)
            return out

        plan.refill = timed
        gc.collect()
        gc.freeze()
        for i in range(reloads + 10):
            arm = ("mine", "base")[(i + i // 2) % 2]  # orders alternate: mb bm mb ...
            use(arm)
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        use("mine")
    for arm, values in times.items():
        v = sorted(values[5:])
        print(f"{arm:5s} plan.refill min {v[0] / 1e3:6.1f}  q25 {v[len(v) // 4] / 1e3:6.1f}  "
              f"median {statistics.median(v) / 1e3:6.1f} us  ({len(v)} reloads)")
    n = min(len(times["mine"]), len(times["base"]))
    diffs = sorted((a - b) / 1e3 for a, b in zip(times["mine"][5:n], times["base"][5:n]))
    print(f"mine - base, paired: median {statistics.median(diffs):+.1f} us, "
          f"lower in {sum(d < 0 for d in diffs)} of {len(diffs)}")


if __name__ == "__main__":
    main()
