"""In situ: the guard restore's parts per reload on the tiny vLLM Llama (refill mode), CPU clock.

    PYTHONPATH=$TREE python3 benchmarks/results/guard57/probe_restore.py 150 [--census]

Times the guard restore and its parts (each wrapped; nested parts include the wrappers below
them) after 5 warm-up reloads and prints min and median microseconds per reload. ``--census``
``--first``: the snapshot's, seal's, grow's and the first five restores' times (one-time
costs) instead. ``--layers L``: the tiny Llama with ``L`` decoder layers (default 2). ``--census``
instead prints, for one reload after the warm-up, what the survey reads: the moved dicts (by
owner chain and container), the items swept in them, the suspects read by key and the hits.
"""

import gc
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

import derivgraph.dict_slots as slots  # noqa: E402
import derivgraph.dict_versions as versions  # noqa: E402
import derivgraph.guard.guard as guard  # noqa: E402
import derivgraph.guard.sweep as sweep  # noqa: E402
import derivgraph.guard.watch as watch  # noqa: E402

now_ = time.thread_time_ns
TIMES: dict[str, list[int]] = {}
PARTS = [(guard.Guard, "restore"), (guard.Guard, "_report"), (guard.Guard, "_moved_storage"),
         (watch.Watch, "survey"), (sweep.Sweep, "dirty"), (sweep.Sweep, "_compare"),
         (sweep.Sweep, "settle"), (versions.DictVersions, "changed"),
         (versions.DictVersions, "adopt"), (sweep._Gather, "differing"),
         (slots.DictSlots, "suspects"), (sweep, "harmless"), (sweep, "_differing"),
         (sweep.Sweep, "_lists"), (sweep.Sweep, "_compared"),
         (sweep.Sweep, "_dirty_whole")]


def wrap(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name, None)
    if fn is None:  # not in this tree
        return
    times = TIMES.setdefault(label, [])

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = now_()
        try:
            return fn(*args, **kwargs)
        finally:
            times.append(now_() - start)

    setattr(owner, name, timed)


def census(g: Any) -> None:
    """What the last survey read (the moved dicts and their items)."""
    w = g.watch
    s = w.sweep
    order = sorted(s.read)
    total = 0
    for i in order:
        node = w.owner[i]
        c = s.live[i]
        n = len(s.acc_of[i])
        total += n
        kind = "__dict__" if c is getattr(node.obj, "__dict__", None) else next(
            (r for r in ("_parameters", "_buffers", "_modules")
             if c is getattr(node.obj, "__dict__", {}).get(r)), type(c).__name__)
        diff = [k for b in s.acc_of[i] for k in [s.acc_keys[b]]
                if c.get(k, sweep.MISSING) is not s.acc_values[b]]
        keys_now = list(c)
        print(f"{'.'.join(node.chain) or '<model>':45s} {type(node.obj).__name__:24s} "
              f"{kind:12s} items {n:3d} len {len(c):3d} differ {diff} "
              f"order_same {tuple(keys_now) == s.keys[i]}")
    print(f"moved dicts {len(order)} of {len(s.tagged)} tagged, {total} items swept; "
          f"watched containers {len(s.live)}, accessors {len(s.acc_dicts)}")
    for g_ in s.gathers.values():
        if g_.slots is not None:
            print("suspects", len(g_.columns[0]), "always", len(g_.slots._always))
            for j in g_.columns[0]:
                b = g_.acc[j]
                held = g_.acc_dicts[j].get(g_.acc_keys[j], sweep.MISSING)
                print("   ", ".".join(w.owner[s.acc_container[b]].chain), g_.acc_keys[j],
                      "same" if held is g_.acc_values[j] else type(held).__name__,
                      "always" if j in g_.slots._always else "")


def variant_all_slots() -> None:
    """Prototype: no version tags; one raw-word proof over every watched dict item."""
    seal = sweep.Sweep.seal

    def sealed(self: Any) -> None:
        seal(self)
        self.tags = None
        order = tuple(self.tagged)
        self._all = order

    def dirty(self: Any) -> Any:
        order = self._all
        gather = self._gather(order)
        lens = list(map(len, gather.dicts))
        resized = [] if lens == gather.lengths else [
            i for i, n, was in zip(order, lens, gather.lengths) if n != was]
        hits = gather.differing()
        dirty = set()
        if hits:
            acc, dicts, keys = gather.acc, gather.acc_dicts, gather.acc_keys
            templates, owners = self.acc_templates, self.acc_container
            for j in hits:
                b = acc[j]
                if templates[b] is None or not sweep.harmless(templates[b],
                                                              dicts[j].get(keys[j], sweep.MISSING)):
                    dirty.add(owners[b])
        if self.lists:
            live, lens_, position = self.live, self.lens, self.position
            self._lists(dirty, [i for i in self.lists if len(live[i]) != lens_[position[i]]])
        return dirty, [i for i in resized if i not in dirty] if resized else resized

    sweep.Sweep.seal = sealed
    sweep.Sweep.dirty = dirty


def checkpoint(seed: int, layers: int = 2) -> dict[str, torch.Tensor]:
    """:func:`vllm_integration.tiny_llama.checkpoint` with ``layers`` decoder layers."""
    weights = tiny.checkpoint(seed)
    for name in [n for n in weights if n.startswith("model.layers.1.")]:
        for i in range(2, layers):
            weights[name.replace("layers.1.", f"layers.{i}.")] = weights[name] * (1 + i / 100)
    return weights


def main() -> None:
    layers = 2
    if "--layers" in sys.argv:
        at = sys.argv.index("--layers")
        layers = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]
        tiny.CONFIG["num_hidden_layers"] = layers
    if "--all-slots" in sys.argv:
        variant_all_slots()
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    do_census = "--census" in sys.argv
    first = "--first" in sys.argv
    if first:  # the one-time costs: the snapshot and the first restores
        for owner, name in ((guard.Guard, "snapshot"), (guard.Guard, "restore"),
                            (sweep.Sweep, "seal"), (sweep.Sweep, "grow")):
            wrap(owner, name, name)
    elif not do_census:
        for owner, name in PARTS:
            wrap(owner, name, name)
    n = int(args[0]) if args else 150
    guards: list[Any] = []
    init = guard.Guard.__init__

    def keep(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        guards.append(self)

    guard.Guard.__init__ = keep
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0, layers), checkpoint(1, layers)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        gc.collect()
        gc.freeze()
        for i in range(5 + n):
            if i == 5 and first:
                for label, values in TIMES.items():
                    print(label, [round(v / 1e3) for v in values], "us")
                return
            if i == 5:
                for values in TIMES.values():
                    values.clear()
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
            if do_census and i >= 5:
                census(guards[-1])
                return
    for label, values in TIMES.items():
        if not values:
            print(f"{label:26s} never called")
            continue
        per = max(1, len(values) // n)
        if per > 1:
            values = [sum(values[j * per:(j + 1) * per]) for j in range(n)]
        print(f"{label:26s} calls/reload {per:3d} min {min(values) / 1e3:7.1f} "
              f"med {statistics.median(values) / 1e3:7.1f}  (n {len(values)})")


if __name__ == "__main__":
    main()
