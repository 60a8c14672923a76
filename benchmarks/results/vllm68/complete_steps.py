"""Where ``completion.complete``'s own body goes in steady reloads (refill after refill, the tiny
vLLM Llama, thread CPU): the function's source re-made with a clock read before each top-level
statement (``STEPS`` of them, by line), run in the module's globals in its place; medians and
q90 per statement over N reloads (each ~1 us of the figure is the clock read).

    PYTHONPATH=. python3 benchmarks/results/vllm68/complete_steps.py [N]
"""
import __future__
import ast
import inspect
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from vllm_integration import completion, session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    tree = ast.parse(textwrap.dedent(inspect.getsource(completion.complete)))
    fn = tree.body[0]
    body = []
    for stmt in fn.body:
        mark = ast.parse(f"_T.append(({stmt.lineno}, _clock()))").body[0]
        body += [mark, stmt]
    body.insert(-1, ast.parse("_T.append((0, _clock()))").body[0])  # before the return
    fn.body = body
    ast.fix_missing_locations(tree)
    scope = dict(vars(completion), _T=[], _clock=time.thread_time_ns)
    exec(compile(tree, "<complete_steps>", "exec",
                 flags=__future__.annotations.compiler_flag, dont_inherit=True), scope)
    session.complete = scope["complete"]
    src = textwrap.dedent(inspect.getsource(completion.complete)).splitlines()
    T = scope["_T"]
    rows: dict[int, list[float]] = {}
    for i in range(30 + n):
        T.clear()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        if i < 30:
            continue
        for (k, a), (_, b) in zip(T, T[1:]):
            rows.setdefault(k, []).append((b - a) / 1e3)
    print(f"load {os.getloadavg()[0]:.2f}; {n} reloads; us per statement (median, q90)")
    for k, v in rows.items():
        if statistics.median(v) >= 1.5:
            print(f"  {statistics.median(v):7.1f} {statistics.quantiles(v, n=10)[-1]:7.1f}  "
                  f"line {k}: {src[k - 1].strip()[:80] if k else '(return)'}")
