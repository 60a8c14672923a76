"""Which lists hold the young UntypedStorage objects after a warm 100k compile, and who holds
those lists (an object's attribute or slot; a closure cell: the generated pass's globals)."""
import gc

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main():
    spec = scaling_spec()
    compile_plan(scaling_model(25000), [spec])
    model = scaling_model(25000)
    gc.collect()
    gc.disable()
    plan = compile_plan(model, [spec])
    ids = {id(o) for o in gc.get_objects(0) if type(o) is torch.UntypedStorage}
    lists = [o for o in gc.get_objects() if type(o) is list and o and id(o[0]) in ids]
    unique = {id(s) for held in lists for s in held}
    print(len(ids), "young storages;", len(unique), "distinct in the lists",
          [len(held) for held in lists])
    for held in lists:
        for r in gc.get_referrers(held):
            if r is lists or type(r).__name__ == "frame":
                continue
            slots = getattr(type(r), "__slots__", ())
            print(len(held), type(r).__qualname__,
                  [s for s in slots if getattr(r, s, None) is held])
    names = [n for n, v in plan.bindings.items() if n.startswith("held")]
    print("pass globals named held*:", len(names), "holding",
          sum(len(plan.bindings[n]) for n in names), "objects")


main()
