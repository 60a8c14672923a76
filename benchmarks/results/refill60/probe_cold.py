"""In situ, one process: four refill pieces on the tiny vLLM Llama (refill mode, right after
vLLM's reload) timed cold (the refill's own call) and again at once (the same call repeated,
warm), thread CPU clock: the take's layout guard and ``_foreach_copy_`` of the 4 engine values,
the partial pass (its ``_foreach_copy_`` of 10 pairs) and ``staged_if_changed``. The repeats
write the same values again (idempotent copies). Prints min / q25 / median per piece.

    PYTHONPATH=$TREE python3 benchmarks/results/refill60/probe_cold.py [reloads]
"""

import gc
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.runtime import engine, programs, storage  # noqa: E402
from vllm_integration import session  # noqa: E402

clock = time.thread_time_ns
times: dict[str, list[int]] = {}


def add(label: str, value: int) -> None:
    times.setdefault(label, []).append(value)


def twice(cls, name: str, label: str) -> None:  # noqa: ANN001
    """``cls.name`` called twice per call, each timed (the caller gets the first's answer)."""
    real = getattr(cls, name)

    def both(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        t0 = clock()
        out = real(*args, **kwargs)
        t1 = clock()
        real(*args, **kwargs)
        add(f"{label} cold", t1 - t0)
        add(f"{label} again", clock() - t1)
        return out

    setattr(cls, name, both)


def execute(self, fn, report) -> None:  # noqa: ANN001
    """The pass run twice, each timed, then counted once (as ``Programs.execute``)."""
    t0 = clock()
    fn()
    t1 = clock()
    fn()
    add("execute: pass (foreach of 10) cold", t1 - t0)
    add("execute: pass (foreach of 10) again", clock() - t1)
    self.count(self._by_name[fn.__name__], report)


def main() -> None:
    reloads = int(sys.argv[1]) if len(sys.argv) > 1 else 160
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    twice(engine.Taken, "copy", "take: copy (foreach of 4)")
    twice(engine.Layouts, "match", "take: layouts match")
    programs.Programs.execute = execute
    twice(storage.BoundTensors, "staged_if_changed", "set_scalars: staged_if_changed")
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        session.state_for(model)
        gc.collect()
        gc.freeze()
        times.clear()
        for i in range(reloads):
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for label, values in times.items():
        v = sorted(x / 1e3 for x in values[10:])
        print(f"{label:44s} n={len(v)} min {v[0]:6.1f} q25 {v[len(v) // 4]:6.1f} "
              f"med {statistics.median(v):6.1f} us")


if __name__ == "__main__":
    main()
