"""A: the refill's generated pass as compiled (cat.out, one _foreach_copy_ of the two
transposed copies, _foreach_max of the six 0-dim scales, _foreach_copy_ into the stages: four
aten calls); B: the same writes in ONE _foreach_copy_ (the cat as copies into two row views of
_fused_kv; amax of a 0-dim tensor is the tensor, so its stage takes a copy). The bound of
lever 3's "batched copies" on this workload (hand-written for the tiny Llama, checked equal)."""
import torch

saved = {}


def _setup(plan):
    (nodes, prog), = [(n, p) for n, p in plan.programs._partial.items() if n]
    g = prog.fn.__globals__
    a, b, out = g["view_getitem"], g["view_getitem_2"], g["fused_kv"]
    assert all(x.dim() == 0 for x in g["group_3"])
    dst = [out.narrow(0, 0, a.shape[0]), out.narrow(0, a.shape[0], b.shape[0]),
           *g["group"], *g["stages"]]
    src = [a, b, *g["group_2"], *g["group_3"]]

    def partial_pass():  # the name execute() looks up
        torch._foreach_copy_(dst, src)

    saved["prog"], saved["A"], saved["B"] = prog, prog.fn, partial_pass
    saved["check"] = (a, b, out, g["group"], g["group_2"], g["stages"], g["group_3"])


def _check():
    """After a reload (outside the timed completion): B's writes equal A's definition."""
    a, b, out, group, group_2, stages, group_3 = saved["check"]
    assert torch.equal(out, torch.cat([a, b], 0))
    assert all(torch.equal(x, y) for x, y in zip(group, group_2))
    assert all(torch.equal(x, y.amax()) for x, y in zip(stages, group_3))
    saved["checked"] = saved.get("checked", 0) + 1


def use(arm, plan, model):
    if "prog" not in saved:
        if not any(plan.programs._partial):
            return  # compiled at the first refill (a warm-up reload, not timed)
        _setup(plan)
    else:
        _check()
    object.__setattr__(saved["prog"], "fn", saved[arm])
