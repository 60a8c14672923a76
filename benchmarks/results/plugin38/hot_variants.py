"""The arms of ``hot_ab.py``: the guard's compare of a layer's dicts done right after vLLM's
``_layerwise_process(layer, info)`` (while that layer's dicts are in cache), reused by the
end-of-reload sweep where the dict's version tag proves it was not stored into since.

Each function takes the model and returns ``{arm: [(owner, attribute, value), ...]}``; the
first arm is the reference. ``EXTRA[0]`` accumulates the CPU time of the per-layer work (after
vLLM's own ``_layerwise_process`` returned) of the current reload; ``hot_ab.py`` reads and
clears it.

The reuse is exact: a dict's tag is read *before* its items are compared, and CPython 3.11
draws every new tag from one global counter, so the same tag at the end proves the dict held,
at the end, exactly what the per-layer compare saw. (``hot_guard_1/2.json`` were taken with
the same pre-checks reused by a copy of ``Sweep._dirty_tagged``; the arm now wraps
``Sweep._compare`` instead, the same answers with less code: ``hot_guard_3.json``.)
"""

from __future__ import annotations

import os
import time
from itertools import repeat
from typing import Any

from derivgraph.guard.holders import MISSING
from derivgraph.guard.sweep import _get, _is, _mismatches

EXTRA = [0.0]  # per-layer work of the current reload, seconds (thread CPU clock)
LAST: Any = None  # the last Hot built (its stats go into the output)


class _Share:
    """One layer's watched dicts: their tag positions and flat accessor columns (built once)."""

    def __init__(self, sweep: Any, containers: list[int], pos: dict[int, int]):
        import numpy as np

        self.containers = containers
        self.index = np.array([sweep.tags._index[pos[i]] for i in containers], dtype=np.intp)
        self.positions = [pos[i] for i in containers]
        self.dicts = [sweep.live[i] for i in containers]
        self.lengths = [sweep.length[i] for i in containers]
        self.acc = [b for i in containers for b in sweep.acc_of[i]]
        self.acc_dicts = [sweep.acc_dicts[b] for b in self.acc]
        self.acc_keys = [sweep.acc_keys[b] for b in self.acc]
        self.acc_values = [sweep.acc_values[b] for b in self.acc]
        self.owner = [sweep.acc_container[b] for b in self.acc]


class Hot:
    """The per-layer pre-checks of one guard's sweep, and the end sweep that reuses them."""

    def __init__(self, guard: Any):
        self.guard = guard
        self.pre: dict[int, tuple[int, bool, list[int], list[Any]]] = {}
        self.stats = {"layers": 0, "reused": 0, "compared_at_end": 0}
        self._build()

    def _build(self) -> None:
        from torch import nn

        sweep = self.guard.watch.sweep
        self.sweep = sweep
        self.built_for = len(sweep.acc_dicts)
        pos = {i: p for p, i in enumerate(sweep.tagged)}
        self.pos = pos
        self.shares: dict[int, _Share] = {}
        for node in self.guard.watch.nodes.values():
            if not isinstance(node.obj, nn.Module):
                continue
            mine = [i for i in range(node.first, node.first + node.count) if i in pos]
            if mine:
                self.shares[id(node.obj)] = _Share(sweep, mine, pos)

    def layer_done(self, layer: Any) -> None:
        """Compare ``layer``'s watched dicts now (tags read first)."""
        if len(self.sweep.acc_dicts) != self.built_for:  # the sweep grew: columns are stale
            self._build()
        share = self.shares.get(id(layer))
        if share is None:
            return
        self.stats["layers"] += 1
        tags = self.sweep.tags._view.take(share.index).tolist()
        lens = list(map(len, share.dicts))
        hits = _mismatches(list(map(_is, map(_get, share.acc_dicts, share.acc_keys,
                                             repeat(MISSING, len(share.acc))),
                                    share.acc_values)))
        pre = self.pre
        for i, tag, n, was in zip(share.containers, tags, lens, share.lengths):
            pre[i] = (tag, n != was, [], [])
        for j in hits:
            record = pre[share.owner[j]]
            record[2].append(share.acc[j])
            record[3].append(share.acc_dicts[j].get(share.acc_keys[j], MISSING))

    def compare(self, original: Any, sweep: Any, dicts: set[int]) \
            -> tuple[list[int], list[int], list[Any]]:
        """``Sweep._compare`` (``original``) taking the pre-check of every dict whose tag did
        not move since it (the sweep read the tags just before: ``changed()``)."""
        tags, pre, pos = sweep.tags, self.pre, self.pos
        ints = tags._moved[2] if tags._moved is not None else tags._list
        reuse = [i for i in dicts if (r := pre.get(i)) is not None and r[0] == ints[pos[i]]]
        rest = dicts.difference(reuse) if reuse else dicts
        self.stats["reused"] += len(reuse)
        self.stats["compared_at_end"] += len(rest)
        resized, wrong, now = original(sweep, rest) if rest else ([], [], [])
        for i in reuse:
            _tag, grew, w, v = pre[i]
            if grew:
                resized.append(i)
            if w:
                wrong, now = [*wrong, *w], [*now, *v]
        return resized, wrong, now


def _timed(original: Any, work: Any) -> Any:
    """``_layerwise_process`` followed by ``work(layer)``, whose CPU time goes to ``EXTRA``."""
    now = time.thread_time

    def process(layer: Any, info: Any) -> None:
        original(layer, info)
        start = now()
        work(layer)
        EXTRA[0] += now() - start

    return process


def hot_guard(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """plugin (as today) / wrap (the per-layer hook alone, doing nothing) / hot (the guard's
    compare of each layer's dicts right after its ``_layerwise_process``, its CPU time in
    ``EXTRA``) / hot_quiet (the same without the clock reads: for the whole-reload totals)."""
    from vllm.model_executor.model_loader.reload import layerwise

    from derivgraph.guard import sweep
    from vllm_integration import session

    global LAST
    guard = session.state_for(model).guard
    hot = LAST = Hot(guard)
    original, compare = layerwise._layerwise_process, sweep.Sweep._compare

    def wrapped(layer: Any, info: Any) -> None:
        original(layer, info)

    def hot_quiet(layer: Any, info: Any) -> None:  # untimed (for the totals)
        original(layer, info)
        hot.layer_done(layer)

    def hot_compare(self: Any, dicts: set[int]) -> Any:
        return hot.compare(compare, self, dicts)

    def checked_compare(self: Any, dicts: set[int]) -> Any:
        """Both answers, asserted the same (``P38_CHECK=1``)."""
        a, b = hot.compare(compare, self, dicts), compare(self, dicts)
        assert sorted(a[0]) == sorted(b[0]), (a, b)
        assert dict(zip(a[1], map(id, a[2]))) == dict(zip(b[1], map(id, b[2]))), (a, b)
        return b

    arm = checked_compare if os.environ.get("P38_CHECK") else hot_compare
    return {"plugin": [(layerwise, "_layerwise_process", original),
                       (sweep.Sweep, "_compare", compare)],
            "wrap": [(layerwise, "_layerwise_process", wrapped),
                     (sweep.Sweep, "_compare", compare)],
            "hot": [(layerwise, "_layerwise_process", _timed(original, hot.layer_done)),
                    (sweep.Sweep, "_compare", arm)],
            "hot_quiet": [(layerwise, "_layerwise_process", hot_quiet),
                          (sweep.Sweep, "_compare", arm)]}


def hot_parts(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: what the per-layer share costs, piece by piece (``EXTRA``, timed; nothing
    reused at the end): the hook's lookup alone, the tag gather alone, the item compare alone,
    and both (as ``hot`` does)."""
    from vllm.model_executor.model_loader.reload import layerwise

    from vllm_integration import session

    hot = Hot(session.state_for(model).guard)
    original = layerwise._layerwise_process

    def lookup(layer: Any) -> None:
        hot.shares.get(id(layer))

    def tags(layer: Any) -> None:
        share = hot.shares.get(id(layer))
        if share is not None:
            hot.sweep.tags._view.take(share.index).tolist()

    def compare(layer: Any) -> None:
        share = hot.shares.get(id(layer))
        if share is not None:
            list(map(len, share.dicts))
            _mismatches(list(map(_is, map(_get, share.acc_dicts, share.acc_keys,
                                          repeat(MISSING, len(share.acc))), share.acc_values)))

    return {"lookup": [(layerwise, "_layerwise_process", _timed(original, lookup))],
            "tags": [(layerwise, "_layerwise_process", _timed(original, tags))],
            "compare": [(layerwise, "_layerwise_process", _timed(original, compare))],
            "both": [(layerwise, "_layerwise_process", _timed(original, hot.layer_done))]}


def hot_copy(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostic: the refill's per-layer share for this model's per-layer entries, done hot:
    right after a ``qkv_proj``'s ``_layerwise_process``, its attention's ``_kv_weight_t`` written
    from it as the pass does (``copy_`` of the transposed K/V rows), timed in ``EXTRA``; the
    end-of-reload pass still runs in full (this prices the per-layer half only)."""
    import torch
    from vllm.model_executor.model_loader.reload import layerwise

    original = layerwise._layerwise_process
    shares = {}
    for layer in model.model.layers:
        attn = layer.self_attn
        shares[id(attn.qkv_proj)] = (attn.qkv_proj, attn._kv_weight_t, attn.q_size)

    def lookup(layer: Any) -> None:
        shares.get(id(layer))

    def copy(layer: Any) -> None:
        share = shares.get(id(layer))
        if share is not None:
            qkv, out, q = share
            with torch.no_grad():
                out.copy_(qkv.weight[q:].t())

    return {"lookup": [(layerwise, "_layerwise_process", _timed(original, lookup))],
            "copy": [(layerwise, "_layerwise_process", _timed(original, copy))]}
