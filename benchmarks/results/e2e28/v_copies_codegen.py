"""The library change of e2e28 (derivgraph/compiler/copies.py): A: the refill's partial pass
compiled as before it (the rewrites off: cat.out, the copy group, _foreach_max of the six
0-dim scales, the stage copy: four aten calls); B: the pass the branch compiles (one
_foreach_copy_). Both are compiled by the branch's build_program into the plan's bindings."""
from derivgraph.compiler import codegen

saved = {}


def _setup(plan):
    (nodes, prog), = [(n, p) for n, p in plan.programs._partial.items() if n]
    progs = plan.programs
    sd, cp = codegen.stage_directly, codegen._copies
    codegen.stage_directly = lambda ctx, steps: (steps, {})
    codegen._copies = lambda em, by_key, singles, direct: ([], 0)
    try:
        old = codegen.build_program(progs.tensors, progs.bindings, prog.steps,
                                    progs.bindings.fresh("partial_pass"), flat=progs.flat)
    finally:
        codegen.stage_directly, codegen._copies = sd, cp
    progs._by_name[old.name] = old
    assert "_foreach_max" in old.source and old.source.count("\n") > prog.source.count("\n")
    saved.update(prog=prog, A=old.fn, B=prog.fn)


def use(arm, plan, model):
    if "prog" not in saved:
        if not any(plan.programs._partial):
            return  # compiled at the first refill (a warm-up reload, not timed)
        _setup(plan)
    object.__setattr__(saved["prog"], "fn", saved[arm])
