"""In situ: the completion's own steps (or another function's, named module:qualname) on the tiny vLLM Llama (refill mode, each plugin reload
after an ``off`` one), thread CPU clock. ``complete`` is re-made from its source with a clock read
after each top-level statement; prints min / q25 / median microseconds of each step.

    PATH=/work/venv/bin:$PATH PYTHONPATH=$TREE python3 benchmarks/results/guard60/complete_steps.py 200 \
        [derivgraph.guard.guard:Guard.restore]
"""

import __future__
import ast
import gc
import importlib
import inspect
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

from vllm_integration import completion, session  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
STEPS: list[list[int]] = []


def instrumented(fn):
    """``fn`` with ``_t(i)`` after each top-level statement (time since the previous mark)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0].body
    out = [ast.parse("_t(-1)").body[0]]
    labels = []
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(getattr(stmt, "value", None), ast.Constant):
            continue
        labels.append(f"{stmt.lineno + fn.__code__.co_firstlineno - 1}: "
                      + ast.unparse(stmt).splitlines()[0][:60])
        out += [stmt, ast.parse(f"_t({len(labels) - 1})").body[0]]
    tree.body[0].body = out
    tree.body[0].decorator_list = []
    space = dict(fn.__globals__)
    marks = [0]
    now = time.thread_time_ns

    def _t(i):
        t = now()
        if i >= 0:
            STEPS[i].append(t - marks[0])
        marks[0] = now()

    space["_t"] = _t
    exec(compile(ast.fix_missing_locations(tree), "<instrumented>", "exec",
                 flags=__future__.annotations.compiler_flag, dont_inherit=True), space)
    STEPS.extend([] for _ in labels)
    return space[fn.__name__], labels


logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
target = sys.argv[2] if len(sys.argv) > 2 else "vllm_integration.completion:complete"
module_name, qualname = target.split(":")
owner = importlib.import_module(module_name)
*path, name = qualname.split(".")
for part in path:
    owner = getattr(owner, part)
fn, labels = instrumented(getattr(owner, name))
if target == "vllm_integration.completion:complete":
    session.complete = fn
else:
    setattr(owner, name, fn)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    for i in range(40):
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for v in STEPS:
        v.clear()
    gc.collect()
    gc.freeze()
    for i in range(n):
        for mode in ("off", "refill"):
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
for label, v in zip(labels, STEPS):
    if v:
        v = [x / 1e3 for x in v]
        print(f"{min(v):7.1f} {statistics.quantiles(v, n=4)[0]:7.1f} {statistics.median(v):7.1f}"
              f"  {label}")
