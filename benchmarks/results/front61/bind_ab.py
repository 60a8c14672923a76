"""In-process A/B of the compile's bind phase (``match_specs`` then ``check_bindings``) on the
stamped scaling model: the base tree's ``compiler/bind.py`` loaded by path beside this tree's,
arms alternated (order reversed every other round), process time, gc off while timed. Both
arms must give the same pairs and issues first.

    PYTHONPATH=. python benchmarks/results/front61/bind_ab.py --base /tmp/base_front61 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/results: module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import bind  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/compiler/bind.py")
    model, spec = scaling_model(args.size // 4), scaling_spec()

    def run(module: ModuleType) -> tuple[list[tuple[str, str]], list[str]]:
        bound = module.match_specs(model, [spec])
        issues = module.check_bindings(bound)
        return [(b.spec.name, b.module_path) for b in bound], [str(i) for i in issues]

    assert run(base) == run(bind), "the arms differ"
    gc.collect()
    gc.disable()
    kept: list[object] = []

    def arm(module: ModuleType) -> None:
        kept.append(module.check_bindings(module.match_specs(model, [spec])))

    times = alternate(args.rounds, {"base": lambda: arm(base), "mine": lambda: arm(bind)})
    gc.enable()
    print("bind (match_specs + check_bindings), 100k derived tensors (25k layers)")
    report(times)
    gc.disable()
    times = alternate(args.rounds, {"base": lambda: base.match_specs(model, [spec]),
                                    "mine": lambda: bind.match_specs(model, [spec])})
    gc.enable()
    print("match_specs alone")
    report(times)
    bound = bind.match_specs(model, [spec])
    gc.disable()
    times = alternate(args.rounds, {"base": lambda: base.check_bindings(bound),
                                    "mine": lambda: bind.check_bindings(bound)})
    gc.enable()
    print("check_bindings alone (one bound list)")
    report(times)


if __name__ == "__main__":
    main()
