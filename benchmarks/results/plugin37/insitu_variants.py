"""The arms of ``insitu_ab.py``: each function takes the model and returns
``{arm: [(owner, attribute, value), ...]}``; the first arm is the reference."""

from __future__ import annotations

from typing import Any


def calib(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """The completion with the guard's restore skipped (a diagnostic: what the guard costs)."""
    from vllm_integration import completion

    real = completion.restore_guard
    return {"plugin": [(completion, "restore_guard", real)],
            "no_guard": [(completion, "restore_guard", lambda *a, **k: None)]}


def calib_refill(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: the refill with one piece skipped each (what that piece costs in situ)."""
    from derivgraph.runtime.holders import Holders
    from vllm_integration import session

    plan = session.plan_for(model)
    b = plan.bindings
    real = {k: b[k] for k in ("set_scalars", "rebind", "restore_storage", "execute")}
    moved, intact = Holders.moved, Holders.sources_intact

    def reset() -> list[tuple[Any, str, Any]]:
        return [(Holders, "moved", moved), (Holders, "sources_intact", intact),
                *((_Item(b), k, v) for k, v in real.items())]

    def skip(name: str, value: Any) -> list[tuple[Any, str, Any]]:
        return [*reset(), (_Item(b), name, value)]

    return {"plugin": reset(),
            "no_moved": [*reset(), (Holders, "moved", lambda self, *a, **k: [])],
            "no_intact": [*reset(), (Holders, "sources_intact", lambda self, *a, **k: True)],
            "no_scalars": skip("set_scalars", lambda *a: None),
            "no_rebind": skip("rebind", lambda *a: 0),
            "no_execute": skip("execute", lambda *a: None)}


class _Item:
    """``setattr`` onto a dict's item (the arms' stores are setattr)."""

    def __init__(self, d: dict[str, Any]):
        self.__dict__["_d"] = d

    def __setattr__(self, name: str, value: Any) -> None:
        self._d[name] = value


def calib_guard(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: the guard's restore with one piece skipped each."""
    from derivgraph.dict_versions import DictVersions
    from derivgraph.guard import guard, sweep

    compare, moved_storage, changed = (sweep.Sweep._compare, guard.Guard._moved_storage,
                                       DictVersions.changed)
    harmless = sweep.harmless

    def reset() -> list[tuple[Any, str, Any]]:
        return [(sweep.Sweep, "_compare", compare), (guard.Guard, "_moved_storage", moved_storage),
                (sweep, "harmless", harmless), (DictVersions, "changed", changed)]

    return {"plugin": reset(),
            "no_compare": [*reset(), (sweep.Sweep, "_compare", lambda self, d: ([], [], []))],
            "no_harmless": [*reset(), (sweep, "harmless", lambda t, v: True)],
            "no_storage": [*reset(), (guard.Guard, "_moved_storage", lambda *a: None)]}


def raw_compare(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Prototype: the guard's item compare reading the dicts' entry tables (raw words)."""
    import atexit
    import ctypes
    import logging
    import os

    import numpy as np

    from derivgraph.guard import sweep
    from derivgraph.guard.holders import MISSING

    view = np.frombuffer((ctypes.c_int64 * (1 << 44)).from_address(8), dtype=np.int64)

    def word(addr: int) -> int:
        return int(view[(addr - 8) >> 3])

    def layout(d: dict) -> tuple[int, int, int, int, int] | None:
        keys, values = word(id(d) + 32), word(id(d) + 40)
        if values:
            return None
        geom = word(keys + 8) & 0xFFFFFF
        kind = (geom >> 16) & 0xFF
        n = word(keys + 24)
        entry0 = keys + 32 + (1 << ((geom >> 8) & 0xFF))
        return keys, geom, kind, n, entry0

    original = sweep.Sweep._compare
    keyed: set[int] = set()
    stats = {"fallback": 0, "fast": 0}
    atexit.register(lambda: logging.getLogger(__name__).error("raw compare: %s, keyed dicts %s",
                                                               stats, sorted(keyed)))
    sweep.Sweep.recorded_keys = {}
    cache: dict[tuple[int, ...], Any] = {}

    def record(self: Any, order: tuple[int, ...], gather: Any) -> Any:
        idx1, rec1, idx2, rec2, acc_pos, idx3, rec3 = [], [], [], [], [], [], []
        slow = []
        pos = 0
        for i in order:
            d = self.live[i]
            accs = self.acc_of[i]
            lay = layout(d) if i not in keyed else None
            ok = lay is not None
            if ok:
                keys, geom, kind, n, entry0 = lay
                size, koff = (24, 8) if kind == 0 else (16, 0)
                slots = {word(entry0 + s * size + koff): s for s in range(n)}
                ok = all(id(self.acc_keys[b]) in slots for b in accs)
            if not ok:
                slow.extend(range(pos, pos + len(accs)))
                pos += len(accs)
                continue
            idx1 += [(id(d) + 32 - 8) >> 3, (id(d) + 40 - 8) >> 3]
            rec1 += [keys, 0]
            idx2.append((keys + 8 - 8) >> 3)
            rec2.append(geom)
            for b in accs:
                s = slots[id(self.acc_keys[b])]
                base = entry0 + s * size + koff
                idx3 += [(base - 8) >> 3, (base + 8 - 8) >> 3]
                rec3 += [id(self.acc_keys[b]), id(self.acc_values[b])]
                acc_pos.append(pos)
                pos += 1
        return (np.array(idx1, dtype=np.intp), np.array(rec1, dtype=np.int64).tobytes(),
                np.array(idx2, dtype=np.intp), np.array(rec2, dtype=np.int64).tobytes(),
                np.array(idx3, dtype=np.intp), np.array(rec3, dtype=np.int64), acc_pos, slow)

    def compare(self: Any, dicts: set[int]) -> Any:
        order = tuple(sorted(dicts))
        gather = self._gather(order)
        lens = list(map(len, gather.dicts))
        resized = [] if lens == gather.lengths else [
            i for i, n, was in zip(order, lens, gather.lengths) if n != was]
        rec = cache.get(order)
        if rec is None:
            rec = cache[order] = record(self, order, gather)
        idx1, rec1, idx2, rec2, idx3, rec3, acc_pos, slow = rec
        acc, gd, keys = gather.acc, gather.acc_dicts, gather.acc_keys
        if view.take(idx1).tobytes() != rec1 or (view.take(idx2) & 0xFFFFFF).tobytes() != rec2:
            cache.pop(order)
            stats["fallback"] += 1
            for i in order:
                lay = layout(self.live[i])
                if lay is None or i in self.recorded_keys and self.recorded_keys[i] != lay[0]:
                    keyed.add(i)
                elif lay is not None:
                    self.recorded_keys[i] = lay[0]
            return original(self, dicts)
        bad = np.flatnonzero(view.take(idx3) != rec3).tolist()
        stats["fast"] += 1
        stats["checked"] = len(slow) + len(bad)
        check = slow + [acc_pos[j >> 1] for j in bad]
        hits = [j for j in check if gd[j].get(keys[j], MISSING) is not gather.acc_values[j]]
        if not hits:
            return resized, [], []
        return resized, [acc[j] for j in hits], [gd[j].get(keys[j], MISSING) for j in hits]

    def checked(self: Any, dicts: set[int]) -> Any:
        a, b = compare(self, dicts), original(self, dicts)
        assert a[0] == b[0] and a[1] == b[1] and all(x is y for x, y in zip(a[2], b[2])), (a, b)
        return a

    return {"plugin": [(sweep.Sweep, "_compare", original)],
            "raw": [(sweep.Sweep, "_compare", checked if os.environ.get("P37_CHECK")
                     else compare)]}


def split_compare(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: the item sweep alone (its hits dropped) against no compare at all."""
    from itertools import repeat

    from derivgraph.guard import sweep
    from derivgraph.guard.holders import MISSING

    original = sweep.Sweep._compare

    def sweep_only(self: Any, dicts: set[int]) -> Any:
        order = tuple(sorted(dicts))
        gather = self._gather(order)
        list(map(len, gather.dicts))
        sweep._mismatches(list(map(sweep._is, map(sweep._get, gather.acc_dicts, gather.acc_keys,
                                                  repeat(MISSING, len(gather.acc))),
                                   gather.acc_values)))
        return [], [], []

    return {"plugin": [(sweep.Sweep, "_compare", original)],
            "sweep_only": [(sweep.Sweep, "_compare", sweep_only)],
            "no_compare": [(sweep.Sweep, "_compare", lambda self, d: ([], [], []))]}


def calib_words(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: every storage-word check answered True without a read (what the
    ``Addresses`` gathers cost in situ), and each check done by one gather instead of two."""
    from derivgraph import addresses

    kept = addresses.Addresses.kept

    def one_take(self: Any) -> bool:
        return self._impls.take(self._impl_index).tobytes() == self._expected[0]

    return {"plugin": [(addresses.Addresses, "kept", kept)],
            "no_words": [(addresses.Addresses, "kept", lambda self: True)],
            "impl_only": [(addresses.Addresses, "kept", one_take)]}


def fused_dirty(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Prototype: ``Sweep.dirty`` with ``_dirty_tagged``, ``_compare``, ``_gather`` and
    ``_mismatches`` inlined for the tagged case (fewer code objects per reload)."""
    import operator
    from itertools import compress, count, repeat

    from derivgraph.guard import sweep
    from derivgraph.guard.holders import MISSING

    original = sweep.Sweep.dirty
    _is, _get, _not = operator.is_, dict.get, operator.not_

    def dirty(self: Any) -> Any:
        tags = self.tags
        if tags is None:
            return original(self)
        moved = self.recheck.union(map(self.tagged.__getitem__, tags.changed()))
        self.read, self.differ = moved, set()
        dirty: set[int] = set()
        resized: list[int] = []
        if moved:
            order = tuple(sorted(moved))
            gather = self.gathers.get(order)
            if gather is None:
                gather = self._gather(order)
            gd = gather.dicts
            lens = list(map(len, gd))
            if lens != gather.lengths:
                resized = [i for i, n, was in zip(order, lens, gather.lengths) if n != was]
            acc, dicts, keys = gather.acc, gather.acc_dicts, gather.acc_keys
            flags = map(_is, map(_get, dicts, keys, repeat(MISSING, len(acc))), gather.acc_values)
            if all(flags):
                wrong: list[int] = []
            else:
                rest = list(map(_not, flags))
                first = len(acc) - len(rest) - 1
                wrong = [first, *compress(count(first + 1), rest)]
            if wrong:
                templates, owners = self.acc_templates, self.acc_container
                now = [dicts[j].get(keys[j], MISSING) for j in wrong]
                wrong = [acc[j] for j in wrong]
                dirty = {owners[b] for b, v in zip(wrong, now)
                         if templates[b] is None or not sweep.harmless(templates[b], v)}
                self.differ = {*resized, *map(owners.__getitem__, wrong)}
            elif resized:
                self.differ = set(resized)
        if self.lists:
            live, lens_, position = self.live, self.lens, self.position
            self._lists(dirty, [i for i in self.lists if len(live[i]) != lens_[position[i]]])
        return dirty, [i for i in resized if i not in dirty] if resized else resized

    return {"plugin": [(sweep.Sweep, "dirty", original)],
            "fused": [(sweep.Sweep, "dirty", dirty)]}


def getter_compare(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Prototype: the item compare as one ``itemgetter`` call per dict (no per-item call)."""
    import operator
    import os
    from itertools import chain, compress, count

    from derivgraph.guard import sweep

    original = sweep.Sweep._compare
    _is, _not, call = operator.is_, operator.not_, operator.call
    cache: dict[tuple[int, ...], Any] = {}

    def prepare(self: Any, order: tuple[int, ...]) -> Any:
        getters, flat_acc, snap = [], [], []
        for i in order:
            accs = self.acc_of[i]
            keys = [self.acc_keys[b] for b in accs]
            if len(accs) == 1:
                accs, keys = accs * 2, keys * 2
            if not accs:
                getters.append(lambda d: ())
                continue
            getters.append(operator.itemgetter(*keys))
            flat_acc += accs
            snap += [self.acc_values[b] for b in accs]
        return getters, flat_acc, snap

    def compare(self: Any, dicts: set[int]) -> Any:
        order = tuple(sorted(dicts))
        gather = self._gather(order)
        prep = cache.get(order)
        if prep is None:
            prep = cache[order] = prepare(self, order)
        getters, flat_acc, snap = prep
        lens = list(map(len, gather.dicts))
        resized = [] if lens == gather.lengths else [
            i for i, n, was in zip(order, lens, gather.lengths) if n != was]
        try:
            now = list(chain.from_iterable(map(call, getters, gather.dicts)))
        except KeyError:
            return original(self, dicts)
        hits = list(compress(count(), map(_not, map(_is, now, snap))))
        if not hits:
            return resized, [], []
        seen: dict[int, Any] = {}
        for j in hits:
            seen.setdefault(flat_acc[j], now[j])
        return resized, list(seen), list(seen.values())

    def checked(self: Any, dicts: set[int]) -> Any:
        a, b = compare(self, dicts), original(self, dicts)
        assert a[0] == b[0] and sorted(a[1]) == sorted(b[1]), (a, b)
        return a

    return {"plugin": [(sweep.Sweep, "_compare", original)],
            "getter": [(sweep.Sweep, "_compare", checked if os.environ.get("P37_CHECK")
                        else compare)]}


def stack_stages(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Prototype: the pass's six scalar stages written by one ``torch.stack(out=)`` instead of
    six element copies inside the ``_foreach_copy_`` (the same values in the same buffer)."""
    import torch

    from vllm_integration import session

    plan = session.plan_for(model)
    b = plan.bindings
    copies, group = b["copies"], b["group"]
    buffer = plan.tensors.stage_groups[0][0]
    n = len(buffer)
    head_c, head_g, tail = copies[:-n], group[:-n], group[-n:]
    for c in copies[-n:]:
        assert c.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
    real = b["execute"]

    def execute(fn: Any, report: Any) -> None:
        torch._foreach_copy_(head_c, head_g)
        torch.stack(tail, out=buffer)
        report.steps += len(copies)

    def loop(fn: Any, report: Any) -> None:
        for c, g in zip(copies, group):
            c.copy_(g)
        report.steps += len(copies)

    return {"plugin": [(_Item(b), "execute", real)],
            "stack": [(_Item(b), "execute", execute)],
            "loop": [(_Item(b), "execute", loop)]}


def calib_plumbing(model: Any) -> dict[str, list[tuple[Any, str, Any]]]:
    """Diagnostics: the completion with the plan's pass and the guard's restore answered by
    the last real reload's reports (what the completion's own bookkeeping costs)."""
    from vllm_integration import completion

    run_plan, restore_guard = completion._run_plan, completion.restore_guard
    last: dict[str, Any] = {}

    def keep_run(*a: Any) -> Any:
        last["run"] = run_plan(*a)
        return last["run"]

    def keep_guard(*a: Any, **k: Any) -> Any:
        last["guard"] = restore_guard(*a, **k)
        return last["guard"]

    return {"plugin": [(completion, "_run_plan", keep_run), (completion, "restore_guard",
                                                             keep_guard)],
            "no_guard": [(completion, "_run_plan", keep_run),
                         (completion, "restore_guard", lambda *a, **k: last["guard"])],
            "plumbing": [(completion, "_run_plan", lambda *a: last["run"]),
                         (completion, "restore_guard", lambda *a, **k: last["guard"])]}
