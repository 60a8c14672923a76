"""cProfile of the plugin's completion over many reloads of the bench's tiny Llama.

    python3 benchmarks/results/plugin36/profile_reload.py [N] [sort] [out.txt]

Builds the model as ``benchmarks/bench_vllm_reload.py`` does, then profiles ``N`` plugin
reloads (refill mode), restricted to ``session._complete`` (the plugin's own cost).
"""

from __future__ import annotations

import cProfile
import gc
import io
import logging
import os
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path.cwd()
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.WARNING)
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

torch.set_num_threads(1)
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm  # noqa: E402
from vllm_integration import session  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
sort = sys.argv[2] if len(sys.argv) > 2 else "cumulative"
prof = cProfile.Profile()
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    orig = session._complete

    def profiled(*a, **k):
        prof.enable()
        try:
            return orig(*a, **k)
        finally:
            prof.disable()

    for i in range(3):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    gc.collect()
    gc.freeze()
    session._complete = profiled
    for i in range(n):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    session._complete = orig
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats(sort).print_stats(70)
text = out.getvalue()
if len(sys.argv) > 3:
    Path(sys.argv[3]).write_text(text)
print(text)  # noqa: T201
