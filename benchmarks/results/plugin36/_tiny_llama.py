"""What plugin36's scripts share: the bench's tiny vLLM Llama (``bench_vllm_reload.py``), loaded
with the plugin, and its reload (checkpoint format, layerwise, as the bench times it).

    with tiny_llama() as (model, reload):
        reload(i)  # checkpoint i % 2, in the mode DERIVGRAPH_VLLM_MODE says
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def setup() -> None:
    """The bench's environment (before vLLM is imported) and the tree on ``sys.path``."""
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
    os.environ.setdefault("DERIVGRAPH_SPECS",
                          str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
    logging.basicConfig(level=logging.ERROR)
    sys.path.insert(0, str(ROOT))


@contextlib.contextmanager
def tiny_llama(warm: int = 3) -> Iterator[tuple[Any, Callable[[int], None]]]:
    """The model (plan compiled by the plugin) and ``reload(i)``; ``warm`` refill reloads run
    first; torch on one thread (the thread's CPU clock sees every op)."""
    setup()
    import torch
    from vllm.model_executor.model_loader.reload import inplace

    from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")

        def reload(i: int) -> None:
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        for i in range(warm):
            reload(i)
        yield model, reload
