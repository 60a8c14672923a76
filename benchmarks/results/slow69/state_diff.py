"""Issue 20.5: does a plugin reload leave vLLM's model in another shape than an ``off`` reload?

    PYTHONPATH=. python3 benchmarks/results/slow69/state_diff.py

If the carry (an ``off`` reload runs slower after a plugin reload than after an ``off`` one) were
state rather than cache, the plugin's reload would leave something vLLM's next reload walks:
another attribute, parameter, buffer, weight loader, dict size, tensor identity, or layerwise
info. This reloads the tiny vLLM Llama (``off``, ``refill``, ``off``, ``refill``...) and after
each reload takes, per module: its ``__dict__`` keys, ``_parameters`` / ``_buffers`` names and
each tensor's id, class, ``__dict__`` keys and ``weight_loader``; the module's layerwise info
(vLLM's ``LAYERWISE_INFO``) fields; the count of ``gc``-tracked objects. It prints whether the
snapshot after ``refill`` equals the one after ``off`` (and after the same mode twice), and the
differing entries if any.
"""
from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
torch.set_num_threads(1)


def tensor_state(t: Any) -> tuple[Any, ...]:
    if t is None:
        return (None,)
    loader = getattr(t, "weight_loader", None)
    return (id(t), type(t).__name__, tuple(sorted(getattr(t, "__dict__", {}))),
            getattr(loader, "__qualname__", repr(loader)), t.untyped_storage().data_ptr())


def snapshot(model: Any, layerwise: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, module in model.named_modules():
        out[f"{name}:dict"] = tuple(sorted(module.__dict__))
        for kind in ("_parameters", "_buffers"):
            for key, t in module.__dict__[kind].items():
                out[f"{name}:{kind}:{key}"] = tensor_state(t)
        info = layerwise.LAYERWISE_INFO.get(module)
        if info is not None:
            out[f"{name}:info"] = tuple(
                (k, type(v).__name__, len(v) if hasattr(v, "__len__") else v)
                for k, v in sorted(vars(info).items()) if k != "restore_metadata")
    return out


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace, layerwise

    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")

    def reload(i: int, mode: str) -> dict[str, Any]:
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        snap = snapshot(model, layerwise)
        snap["gc tracked objects"] = len(gc.get_objects())
        return snap

    for i in range(20):
        reload(i, "refill")
    seq = ["off", "off", "refill", "refill", "off", "refill", "off", "off"]
    snaps = [(mode, reload(i, mode)) for i, mode in enumerate(seq)]
    tracked = [s.pop("gc tracked objects") for _, s in snaps]
    print("sequence:", " ".join(seq))
    print("gc-tracked objects after each:", tracked)
    print(f"entries per snapshot: {len(snaps[0][1])}")
    base_mode, base = snaps[0]
    for k, (mode, snap) in enumerate(snaps[1:], 1):
        diff = sorted(key for key in base.keys() | snap.keys() if base.get(key) != snap.get(key))
        print(f"  after #{k} ({mode}) vs #0 ({base_mode}): {len(diff)} differing entries"
              + (f": {diff[:8]}" if diff else ""))
