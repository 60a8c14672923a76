"""Where the plugin's reload cost outside ``complete`` goes (task item 1), in one process.

Alternates an ``off`` reload and a plugin (``refill``) reload of the tiny vLLM Llama, ROUNDS
pairs, thread CPU clock, and times (inclusive, us) vLLM's own functions inside the hooks (the
wrappers' ``orig`` swapped for a timed one through the closure cell) and the session entry
points the hooks call. Prints per-arm medians and the paired plugin - off medians.

    PYTHONPATH=. python3 benchmarks/results/reload61/attribute_outside.py 300
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def main(rounds: int) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    now = time.thread_time
    rec: dict[str, float] = {}

    def timed(fn: Any, label: str) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            t = now()
            try:
                return fn(*a, **k)
            finally:
                rec[label] = rec.get(label, 0.0) + (now() - t) * 1e6
        return inner

    def swap_orig(wrapper: Any, label: str) -> None:
        orig = wrapper.__wrapped__
        for cell in wrapper.__closure__:
            if cell.cell_contents is orig:
                cell.cell_contents = timed(orig, label)
                return
        raise RuntimeError(label)

    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace, layerwise

        from vllm_integration import reload_wrappers, session

        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        plan = session.plan_for(model)
        assert plan is not None
        swap_orig(inplace.reload_weights, "vllm.reload_weights")
        swap_orig(inplace.initialize_layerwise_reload, "vllm.initialize")
        swap_orig(inplace.finalize_layerwise_reload, "vllm.finalize")
        live = model.__dict__["load_weights"]
        live._load = timed(live._load, "vllm.load_weights")
        for name in ("begin", "end", "note_names", "recording", "witness_note", "_complete"):
            setattr(session, name, timed(getattr(session, name), f"session.{name}"))
        for name in ("_layerwise_process", "materialize_layer",
                     "_copy_and_restore_kernel_tensors", "_place_kernel_tensors",
                     "get_layer_size", "_wrap_parameters_weight_loader"):
            setattr(layerwise, name, timed(getattr(layerwise, name), f"vllm.lw.{name}"))
        rec_gen = reload_wrappers._recording

        def recording(*a: Any, **k: Any) -> Any:
            gen = rec_gen(*a, **k)
            while True:
                t = now()
                try:
                    item = next(gen)
                except StopIteration:
                    rec["_recording"] = rec.get("_recording", 0.0) + (now() - t) * 1e6
                    return
                rec["_recording"] = rec.get("_recording", 0.0) + (now() - t) * 1e6
                yield item
        reload_wrappers._recording = recording

        out: dict[str, dict[str, list[float]]] = {"off": {}, "refill": {}}

        def reload(i: int, mode: str) -> None:
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            rec.clear()
            items = iter(weights[i % 2].items())
            t = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            rec["total"] = (now() - t) * 1e6
            for k, v in rec.items():
                out[mode].setdefault(k, []).append(v)

        for i in range(4):
            reload(i, "off")
            reload(i, "refill")
        for arm in out.values():
            arm.clear()
        gc.collect()
        gc.freeze()
        if os.environ.get("GCOFF"):
            gc.disable()
        for i in range(rounds):
            order = ("off", "refill") if i % 2 == 0 else ("refill", "off")
            for mode in order:
                reload(i, mode)
    off, on = out["off"], out["refill"]
    for arm in (off, on):
        arm["glue: reload_weights wrapper"] = [
            t - v for t, v in zip(arm["total"], arm["vllm.reload_weights"])]
        inner = [arm["vllm.initialize"], arm["vllm.load_weights"], arm["vllm.finalize"]]
        arm["vllm.reload_weights - its three parts"] = [
            r - a - b - c for r, a, b, c in zip(arm["vllm.reload_weights"], *inner)]
    on["outside = total - _complete"] = [t - c for t, c in zip(on["total"],
                                                                on["session._complete"])]
    print(f"GCOFF={os.environ.get('GCOFF', '')} rounds {rounds}, load {os.getloadavg()[0]:.1f}")
    print(f"{'piece':45s} {'off med':>9s} {'plugin med':>10s} {'plugin min':>10s} "
          f"{'paired med':>10s}")
    for k in sorted(set(off) | set(on)):
        a, b = off.get(k), on.get(k)
        pm = statistics.median(x - y for x, y in zip(b, a)) if a and b else float("nan")
        print(f"{k:45s} {statistics.median(a) if a else float('nan'):9.1f} "
              f"{statistics.median(b) if b else float('nan'):10.1f} "
              f"{min(b) if b else float('nan'):10.1f} {pm:10.1f}")
    total_paired = [b - a for a, b in zip(off["total"], on["total"])]
    outside = [d - c for d, c in zip(total_paired, on["session._complete"])]
    print(f"paired total delta median {statistics.median(total_paired):.1f}; "
          f"paired outside (delta - complete) median {statistics.median(outside):.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
