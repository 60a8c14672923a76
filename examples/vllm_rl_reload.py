"""An RL-style loop on vLLM 0.33.0: reload weights every step, derivgraph keeps graphs valid.

**Needs a CUDA GPU, vLLM 0.33.0 and two checkpoints of one model; it cannot run on a CPU-only
machine** (the tests drive the same hooks through vLLM's real reload code on CPU instead).
Importing this file needs neither vLLM nor a GPU.

What happens:

* vLLM loads derivgraph's general plugin in every process (entry point
  ``vllm.general_plugins: derivgraph``); after the initial load it compiles each model's plan
  from the spec library, adopting the derived tensors vLLM built.
* ``worker_extension_cls`` adds the ``derivgraph_*`` RPCs to every worker.
* Each step generates greedily (CUDA graphs captured at startup), then reloads the other
  checkpoint with ``reload_weights`` (layerwise: vLLM reruns each layer's post-load step, and
  derivgraph refills every declared derived tensor into its startup storage and re-binds the
  rebuilt experts / quant configs). A -> B -> A: the outputs at A must repeat exactly.
* ``DERIVGRAPH_VLLM_MODE=strict`` makes a reload that moved any graph-visible tensor, or left
  an undeclared derived tensor, fail (``StrictReloadError``) instead of serving wrong output.

Trainers that stream weights use the weight-transfer engines instead of ``reload_weights``
(``llm.init_weight_transfer_engine(...)``, ``start_weight_update``, ``update_weights``,
``finish_weight_update``): the hooks cover those too, including sparse patch engines.

    DERIVGRAPH_VLLM_MODE=strict python examples/vllm_rl_reload.py \\
        --model Qwen/Qwen3-30B-A3B-FP8 --other /ckpt/qwen3-30b-a3b-fp8-step100 --steps 4
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from typing import Any

logger = logging.getLogger("vllm_rl_reload")

EXTENSION = "vllm_integration.worker_extension.DerivgraphWorkerExtension"
PROMPTS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Natalia sell altogether in April and May?",
    "The capital of France is",
]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="checkpoint A (served at startup)")
    parser.add_argument("--other", required=True, help="checkpoint B (same architecture)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--mode", default="strict", choices=["refill", "recompute", "strict"])
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    return parser.parse_args(argv)


def _total(results: list[dict[str, Any]], key: str) -> int:
    """Sum a per-model number over every worker's RPC result."""
    return sum(m[key] for worker in results for m in worker["models"])


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(level=logging.INFO)
    os.environ["DERIVGRAPH_VLLM_MODE"] = args.mode  # read by the plugin in every process

    from vllm import LLM, SamplingParams

    llm = LLM(model=args.model, tensor_parallel_size=args.tensor_parallel_size,
              worker_extension_cls=EXTENSION, enforce_eager=False)  # CUDA graphs on
    sampling = SamplingParams(temperature=0.0, max_tokens=64)

    summary = llm.collective_rpc("derivgraph_summary")
    logger.info("plan per worker: %s", json.dumps(summary, indent=1))
    llm.collective_rpc("derivgraph_audit")  # baseline: what the captured graphs read

    checkpoints = [args.model, args.other]
    seen: dict[str, list[str]] = {}
    for step in range(args.steps):
        current = checkpoints[step % 2]
        texts = [o.outputs[0].text for o in llm.generate(PROMPTS, sampling)]
        if current in seen and seen[current] != texts:
            logger.error("step %d: outputs at %s differ from the first time", step, current)
            return 1
        seen.setdefault(current, texts)

        # ... a trainer would update the weights here; this loop alternates A and B ...
        target = checkpoints[(step + 1) % 2]
        llm.collective_rpc("reload_weights",
                           kwargs={"weights_path": target, "is_checkpoint_format": True})
        counters = llm.collective_rpc("derivgraph_counters")
        audit = llm.collective_rpc("derivgraph_audit")
        logger.info("step %d -> %s: %d tensors refilled, moved after reload %d, audit moved %d, "
                    "undeclared %d", step, target, _total(counters, "tensors_written"),
                    _total(counters, "moved_last"), _total(audit, "moved"),
                    _total(audit, "undeclared"))
        if _total(audit, "moved") or _total(audit, "undeclared"):
            logger.error("graph-visible tensors moved: %s", json.dumps(audit, indent=1))
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
