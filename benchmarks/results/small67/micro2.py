"""Interleaved A/B micro of small67's second round (old rule vs new rule, same process)."""
import gc, operator, statistics, time
from itertools import compress, repeat
from operator import attrgetter
from torch import nn
from derivgraph.adoption import ViewOf, AliasOf
from derivgraph.compiler.fold import fold_decls

def pair(name, a, b, reps, M=31):
    ta, tb = [], []
    for _ in range(M):
        for f, out in ((a, ta), (b, tb)):
            gc.collect()
            t = time.perf_counter()
            for _ in range(reps):
                f()
            out.append((time.perf_counter() - t) / reps)
    wins = sum(y < x for x, y in zip(ta, tb))
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"{name}: old {ma*1e6:.0f} us, new {mb*1e6:.0f} us ({ma/mb:.2f}x), new faster {wins} of {M}")

# planner._compile's view filter over 100k planned (entry, extra) rows, no view among them
planned = [(object(), None if i % 2 else AliasOf("x")) for i in range(100000)]
_extra = operator.itemgetter(1)
def old_views():
    return list(((e, x) for e, x in planned if isinstance(x, ViewOf)))
def new_views():
    views = list(map(isinstance, map(_extra, planned), repeat(ViewOf)))
    return list(compress(planned, views)) if any(views) else []
assert old_views() == new_views() == []
pair("planned view filter, 100k rows", old_views, new_views, 3)

# paths.ModuleOwners._own_classes over 50k modules
mods = [nn.Linear(1, 1, bias=False) for _ in range(50000)]
_C, _D = attrgetter("__class__"), attrgetter("__dict__")
def old_own():
    plain = not any(o.__class__ is not type(o) for o in mods)
    return [o.__dict__ for o in mods] if plain else None
def new_own():
    plain = all(map(operator.is_, map(_C, mods), map(type, mods)))
    return list(map(_D, mods)) if plain else None
assert old_own() == new_own()
pair("ModuleOwners._own_classes, 50k modules", old_own, new_own, 3)

# compile_folds' row loop over 25k bound specs of one spec without folds
class B:
    __slots__ = ("spec", "module_path", "module")
    def __init__(self, s, p, m): self.spec, self.module_path, self.module = s, p, m
class S:
    derived = []
spec = S()
bound = [B(spec, f"m.{i}", None) for i in range(25000)]
_S = attrgetter("spec")
def old_folds():
    of_spec = {}
    for b in bound:
        decls = of_spec.get(id(b.spec))
        if decls is None:
            decls = of_spec[id(b.spec)] = fold_decls(b.spec.derived)
        for d in decls:
            pass
def new_folds():
    ids = list(map(id, map(_S, bound)))
    of_spec = {k: fold_decls(s.derived) for k, s in dict(zip(ids, map(_S, bound))).items()}
    if not any(of_spec.values()):
        return
pair("compile_folds row loop, 25k rows, no fold", old_folds, new_folds, 3)
from operator import is_
def one_spec_folds():
    specs = list(map(_S, bound))
    if specs and all(map(is_, specs, repeat(specs[0]))) and not fold_decls(specs[0].derived):
        return
    raise AssertionError
pair("compile_folds row loop, 25k rows, no fold: old vs one-spec test", old_folds, one_spec_folds, 3)
