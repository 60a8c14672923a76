"""cProfile of the plugin's completion (``session._complete``) over N refill-mode reloads of the
tiny vLLM Llama, by own time. See README.txt beside this file.

    PYTHONPATH=$PWD python3 benchmarks/results/s48/reload_profile/cprofile_complete.py 300
"""

import cProfile
import gc
import logging
import os
import pstats
import sys
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from vllm_integration import session  # noqa: E402

reloads = int(sys.argv[1]) if len(sys.argv) > 1 else 300
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    prof = cProfile.Profile()
    complete = session._complete

    def profiled(*args, **kwargs):
        prof.enable()
        try:
            return complete(*args, **kwargs)
        finally:
            prof.disable()

    session._complete = profiled
    gc.collect()
    gc.freeze()
    for i in range(reloads):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    pstats.Stats(prof).sort_stats("tottime").print_stats(45)
