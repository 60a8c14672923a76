"""In situ: the guard survey's parts per reload on the tiny vLLM Llama (refill mode), CPU clock.

    PYTHONPATH=$TREE python3 benchmarks/results/survey55/probe_survey.py 150 [--phases] \
        [module:Class.method ...]

Times ``Sweep.dirty``, ``Sweep._compare``, ``Sweep.settle``, ``DictVersions.changed``, the
sweep's ``harmless`` calls and ``Watch.survey`` (plus any ``module:Class.method`` named), after 5
warm-up reloads; prints min and median microseconds per reload (summed where called more than
once a reload). ``--layers L``: the tiny Llama with ``L`` decoder layers instead of 2 (the
moved dicts and their items grow with it). ``--phases`` (this tree only) also times the three
gathers of ``DictSlots.suspects`` and the search for the hits, by a copy of that method.
"""

import gc
import importlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

import vllm_integration.tiny_llama as tiny  # noqa: E402
from vllm_integration.tiny_llama import SPECS, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

import derivgraph.dict_versions as versions  # noqa: E402
import derivgraph.guard.sweep as sweep  # noqa: E402

now_ = time.thread_time_ns
TIMES: dict[str, list[int]] = {}


def wrap(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name)
    times = TIMES.setdefault(label, [])

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = now_()
        try:
            return fn(*args, **kwargs)
        finally:
            times.append(now_() - start)

    setattr(owner, name, timed)


def phases() -> None:
    """A copy of ``DictSlots.suspects`` timing each phase (this tree's version of it)."""
    import numpy as np

    from derivgraph import dict_slots as ds

    def suspects(self: Any) -> Any:
        for _ in range(ds._TRIES):
            t0 = now_()
            now = ds._WORDS.take(self._heads)
            ok = now.tobytes() == self._heads_bytes
            t1 = now_()
            TIMES.setdefault("phase: heads", []).append(t1 - t0)
            if not ok:
                self._reprove({h >> 1 for h in np.flatnonzero(now != self._heads_were).tolist()})
                TIMES.setdefault("phase: proofs made again", []).append(now_() - t1)
                continue
            now = ds._HALVES.take(self._layouts)
            ok = now.tobytes() == self._layouts_bytes
            t2 = now_()
            TIMES.setdefault("phase: layouts", []).append(t2 - t1)
            if not ok:
                self._reprove(set(np.flatnonzero(now != self._layouts_were).tolist()))
                TIMES.setdefault("phase: proofs made again", []).append(now_() - t2)
                continue
            now = ds._WORDS.take(self._read)
            ok = now.tobytes() == self._read_bytes
            t3 = now_()
            TIMES.setdefault("phase: words", []).append(t3 - t2)
            if ok:
                return self._always
            differ = now != self._read_expected
            t4 = now_()
            hits = differ.nonzero()[0].tolist()
            t5 = now_()
            found = list(dict.fromkeys(map(self._item_of.__getitem__, hits)))
            out = sorted(self._always + found) if self._always else found
            t6 = now_()
            TIMES.setdefault("phase: != (ufunc)", []).append(t4 - t3)
            TIMES.setdefault("phase: nonzero", []).append(t5 - t4)
            TIMES.setdefault("phase: hits to items", []).append(t6 - t5)
            TIMES.setdefault("suspects (count, x1000)", []).append(len(out) * 1000)
            return out
        return None

    ds.DictSlots.suspects = suspects


def checkpoint(seed: int, layers: int) -> dict[str, torch.Tensor]:
    """:func:`vllm_integration.tiny_llama.checkpoint` with ``layers`` decoder layers."""
    weights = tiny.checkpoint(seed)
    for name in [n for n in weights if n.startswith("model.layers.1.")]:
        for i in range(2, layers):
            weights[name.replace("layers.1.", f"layers.{i}.")] = weights[name] * (1 + i / 100)
    return weights


def main() -> None:
    argv = sys.argv[1:]
    layers = 2
    if "--layers" in argv:
        at = argv.index("--layers")
        layers = int(argv[at + 1])
        del argv[at:at + 2]
        tiny.CONFIG["num_hidden_layers"] = layers
    args = [a for a in argv if a != "--phases"]
    if "--phases" in sys.argv:
        phases()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    for owner, name in ((sweep.Sweep, "dirty"), (sweep.Sweep, "_compare"),
                        (sweep.Sweep, "settle"), (versions.DictVersions, "changed"),
                        (sweep, "harmless")):
        wrap(owner, name, name)
    for spec in args[1:]:
        module, qual = spec.split(":")
        cls, meth = qual.split(".")
        wrap(getattr(importlib.import_module(module), cls), meth, qual)
    n = int(args[0]) if args else 150
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0, layers), checkpoint(1, layers)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        from derivgraph.guard import watch
        wrap(watch.Watch, "survey", "survey")
        gc.collect()
        gc.freeze()
        for i in range(5 + n):
            if i == 5:
                for values in TIMES.values():
                    values.clear()
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for label, values in TIMES.items():
        per = max(1, len(values) // n)
        if not values:
            continue
        if per > 1:
            values = [sum(values[j * per:(j + 1) * per]) for j in range(n)]
        print(f"{label:26s} calls/reload {per:3d} min {min(values) / 1e3:7.1f} "
              f"med {statistics.median(values) / 1e3:7.1f}  (n {len(values)})")


if __name__ == "__main__":
    main()
