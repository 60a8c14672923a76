"""Profiles of the plugin's per-reload completion on the tiny vLLM Llama, refill mode, over N
reloads: ``--tool cprofile``, the completion (``session._complete``) by own time;
``--tool lines``, line_profiler of the guard's survey (``--part guard``) or of the refill's
checks (``--part refill``). See README.txt beside this file.

    cd benchmarks/results/s48/reload_profile  # PYTHONPATH=the repository root
    python3 profile_complete.py --tool cprofile 300
    python3 profile_complete.py --part guard 300
"""

import argparse
import cProfile
import gc
import logging
import os
import pstats
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph import addresses  # noqa: E402
from derivgraph.guard.guard import Guard  # noqa: E402
from derivgraph.guard.sweep import Sweep  # noqa: E402
from derivgraph.runtime import accessors, engine  # noqa: E402
from derivgraph.runtime.holders import Holders  # noqa: E402
from derivgraph.runtime.plan import Plan  # noqa: E402
from vllm_integration import session  # noqa: E402

PARTS = {
    "guard": (Plan.run, Sweep._compare, Guard._plan_watched, Sweep._dirty_tagged),
    "refill": (Holders.sources_intact, Holders.moved, Holders.rebind, Holders._rebind_stale,
               Holders._sources_held, Holders.owners_current, addresses.AtAddresses.intact,
               Plan._take_batched, engine.RefillTable.take, engine.Taken.copy,
               accessors.HolderTable.settle, accessors.HolderTable.stale, Plan._set_scalars),
}

parser = argparse.ArgumentParser()
parser.add_argument("reloads", type=int, nargs="?", default=300)
parser.add_argument("--part", choices=sorted(PARTS), default="guard")
parser.add_argument("--tool", choices=["lines", "cprofile"], default="lines")
args = parser.parse_args()
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    if args.tool == "cprofile":
        prof = cProfile.Profile()
        complete = session._complete

        def profiled(*a, **k):
            prof.enable()
            try:
                return complete(*a, **k)
            finally:
                prof.disable()

        session._complete = profiled
    else:
        try:
            from line_profiler import LineProfiler
        except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
            raise SystemExit("--tool lines needs line-profiler: pip install -e '.[profile]'") \
                from exc
        prof = LineProfiler()
        for fn in PARTS[args.part]:
            prof.add_function(fn)
    gc.collect()
    gc.freeze()
    if args.tool == "lines":
        prof.enable()
    for i in range(args.reloads):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    if args.tool == "cprofile":
        pstats.Stats(prof).sort_stats("tottime").print_stats(45)
    else:
        prof.disable()
        prof.print_stats(stripzeros=True)
