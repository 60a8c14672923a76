"""Every hostile spec fails fast and small: < 1 s and < 100 MB extra memory each.

Runs every file of the corpus (``tests/resources/specs/``) plus generated inputs too big to
keep in the repository (a 10 MB formula as a file and through the Python API, a 10-level
billion-laughs document) through ``derivgraph validate``'s checks (load + check_specs) and
through ``compile_plan`` against a model, and measures for each:

* wall time of each path (best of 3, no tracing);
* peak Python heap while refusing it (``tracemalloc``), and the process's peak RSS growth over
  the whole run (``ru_maxrss``: catches native allocations such as tensors too).

Also times ``derivgraph validate specs`` in a fresh interpreter against ``import torch``.
Exit status 1 if any bound is broken::

    python3 benchmarks/bench_hostile_specs.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import derivgraph  # noqa: E402
from derivgraph import SpecValidationError, compile_plan, load_spec_file  # noqa: E402
from derivgraph.spec.check import check_specs  # noqa: E402

TIME_LIMIT_S = 1.0
MEMORY_LIMIT_B = 100 * 2 ** 20
CORPUS = ROOT / "tests" / "resources" / "specs"


class Toy(nn.Module):
    """The module the corpus targets (``module_class: Toy``): a weight, a scale, a submodule
    and a plain holder object, as in the test suite's toy model."""

    def __init__(self, rows: int = 4, cols: int = 3, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(rows, cols, generator=g), requires_grad=False)
        self.scale = nn.Parameter(0.5 + torch.rand(rows, generator=g), requires_grad=False)
        self.sub = nn.Module()
        self.holder = type("Holder", (), {})()
        self.kernel = None


def _generated(tmp: Path) -> dict[str, Path]:
    big = tmp / "formula_10mb.yaml"
    big.write_text("version: 1\nspecs:\n  - name: x\n    target: {module_class: Toy}\n"
                   "    derived:\n      - {name: out, kind: attribute, formula: '"
                   + "+".join(["scale"] * 1_750_000) + "'}\n")
    laughs = tmp / "billion_laughs_10.yaml"
    text = "version: 1\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for i in range(1, 11):
        text += f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n"
    laughs.write_text(text + "specs: *l10\n")
    return {"generated/formula_10mb.yaml": big, "generated/billion_laughs_10.yaml": laughs}


def _python_formula_10mb() -> list[derivgraph.Spec]:
    return [derivgraph.Spec(name="x", target=derivgraph.Target(module_class="Toy"),
                            derived=[derivgraph.DerivedTensor(
                                name="out", kind="attribute",
                                formula="+".join(["scale"] * 1_750_000))])]


def _validate(load: Callable[[], list[derivgraph.Spec]]) -> str:
    try:
        issues = check_specs(load())
    except SpecValidationError as exc:
        issues = exc.issues
    assert issues, "not refused"
    return issues[0].rule.split()[0]


def _compile(load: Callable[[], list[derivgraph.Spec]]) -> str:
    try:
        compile_plan(Toy(), load())
    except SpecValidationError as exc:
        return exc.issues[0].rule.split()[0]
    raise AssertionError("not refused")


def _best_time(fn: Callable[[], str]) -> tuple[float, str]:
    times, code = [], ""
    for _ in range(3):
        start = time.perf_counter()
        code = fn()
        times.append(time.perf_counter() - start)
    return min(times), code


def _heap_peak(fn: Callable[[], str]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _cli_start(runs: int = 3) -> dict[str, float]:
    def med(cmd: list[str]) -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return {
        "validate_specs_s": med([sys.executable, "-m", "derivgraph.cli", "validate", "specs"]),
        "import_torch_s": med([sys.executable, "-c", "import torch"]),
        "python_s": med([sys.executable, "-c", "pass"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--tmp", default="/tmp/derivgraph_hostile")
    args = parser.parse_args()
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    inputs: dict[str, Callable[[], list[derivgraph.Spec]]] = {
        f"corpus/{p.name}": (lambda p=p: load_spec_file(p)) for p in sorted(CORPUS.glob("*.yaml"))
    }
    inputs.update({name: (lambda p=p: load_spec_file(p)) for name, p in _generated(tmp).items()})
    inputs["python/formula_10mb"] = _python_formula_10mb
    # warm up: torch's meta decompositions and the op registry load once per process
    compile_plan(Toy(), [derivgraph.Spec(name="w", target=derivgraph.Target(module_class="Toy"),
                                         derived=[derivgraph.DerivedTensor(
                                             name="ok", kind="attribute",
                                             formula="cat([scale, scale], 0)")])])
    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows, failures = [], []
    for name, load in inputs.items():
        v_time, v_code = _best_time(lambda load=load: _validate(load))
        c_time, c_code = _best_time(lambda load=load: _compile(load))
        heap = max(_heap_peak(lambda load=load: _validate(load)),
                   _heap_peak(lambda load=load: _compile(load)))
        row = {"input": name, "code": c_code, "validate_s": round(v_time, 4),
               "compile_s": round(c_time, 4), "heap_peak_mb": round(heap / 2 ** 20, 2)}
        rows.append(row)
        if v_code != c_code or max(v_time, c_time) >= TIME_LIMIT_S or heap >= MEMORY_LIMIT_B:
            failures.append(row)
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_start
    cli = _cli_start()
    for r in sorted(rows, key=lambda r: -max(r["validate_s"], r["compile_s"]))[:10]:
        print(f"{r['input']:<48} {r['code']}  validate {r['validate_s']:.3f} s  compile "
              f"{r['compile_s']:.3f} s  heap {r['heap_peak_mb']:.1f} MB")
    summary = {
        "inputs": len(rows),
        "max_s": max(max(r["validate_s"], r["compile_s"]) for r in rows),
        "max_heap_mb": max(r["heap_peak_mb"] for r in rows),
        "rss_growth_mb": round(rss_growth / 2 ** 20, 1),
        "cli": {k: round(v, 3) for k, v in cli.items()},
        "failures": failures,
    }
    if rss_growth >= MEMORY_LIMIT_B:
        failures.append({"rss_growth_mb": summary["rss_growth_mb"]})
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
