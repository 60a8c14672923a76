"""Draw vLLM 0.33.0 source files for a held-out recall list that no audit rule proposes.

    python3 tests/resources/static_recall_file_draw.py --population-only
    python3 tests/resources/static_recall_file_draw.py \
        --seed-file tests/resources/static_recall_file_seed_v14.json
    python3 tests/resources/static_recall_file_draw.py --population untouched --population-only
    python3 tests/resources/static_recall_file_draw.py --population untouched \
        --seed-file tests/resources/static_recall_file_seed_v14b.json
    python3 tests/resources/static_recall_file_draw.py --population v15 --population-only
    python3 tests/resources/static_recall_file_draw.py --population v15 \
        --seed-file tests/resources/static_recall_file_seed_v15.json
    python3 tests/resources/static_recall_file_draw.py --population v16 --population-only
    python3 tests/resources/static_recall_file_draw.py --population v16 \
        --seed-file tests/resources/static_recall_file_seed_v16.json
    python3 tests/resources/static_recall_file_draw.py --population v17 --population-only
    python3 tests/resources/static_recall_file_draw.py --population v17 \
        --seed-file tests/resources/static_recall_file_seed_v17.json
    python3 tests/resources/static_recall_file_draw.py --population v18 --population-only
    python3 tests/resources/static_recall_file_draw.py --population v18 \
        --seed-file tests/resources/static_recall_file_seed_v18.json

The population (written before any draw was seen; it uses no audit rule) is every ``.py`` file
under these folders of the installed ``vllm`` package:

    vllm/model_executor/  vllm/v1/attention/  vllm/v1/worker/  vllm/v1/spec_decode/  vllm/lora/

whose text contains both

1. a post-load hook word: ``process_weights_after_loading``, ``post_load`` or ``_after_load``
   (a definition, a call or a mention: the file takes part in what runs after loading), and
2. an attribute store on ``self`` or ``layer``: a line matching
   ``^\\s*(self|layer)\\.<name>(\\[...\\])? = `` (not ``==``), or a ``setattr(`` /
   ``register_buffer(`` / ``replace_parameter(`` call.

Paths are relative to site-packages (``vllm/...``), ``/``-separated, sorted. The draw is
``random.Random(seed).sample(population, n)`` with ``seed`` and ``n`` read from ``--seed-file``,
printed as JSON with the files in drawn order (the judge reads them in that order and, when time
runs short, judges a prefix of it). ``--population-only`` prints only the population size.

``--population v14`` (the default) is the population above, unchanged. ``--population untouched``
(recall v14b, written before any v14b draw) widens the second condition to where derived tensors
also live and then removes every file an earlier list touched. It is every ``.py`` file under
the same five folders whose text holds an attribute store (condition 2 above) and at least one of

a. a post-load hook word (condition 1 above),
b. a lazy store guard: ``if not hasattr(self|layer, ...``, ``if self.<name> is None`` /
   ``if layer.<name> is None``, or ``if getattr(self|layer, ..., None) is None`` (a value built
   on first use in ``forward``/``apply``, outside any hook), or
c. a tensor made straight onto the object: a line ``self.<name> = torch.<fn>(`` /
   ``layer.<name> = torch.<fn>(`` (indexed stores too), or a ``register_buffer(`` call (buffers
   and workspaces built in ``__init__`` of layers, kernels, attention backends, speculators),

minus every file that holds any candidate key (any ``file`` field, real or not) of the earlier
lists ``static_recall_outside_v{1..9,10,10b,11,12,13,13c,14}_vllm_0.33.json`` and minus the 12
files of ``static_recall_file_v14_draw.json``. The draw rule is the same.

``--population v15`` (recall v15, written before any v15 draw, judged by two readers who do not
see each other's work) is the v14 population minus the files v14 and v14b drew: v14 showed that
population holds real sites (8 in 12 files) where v14b's held none, and files an earlier list
touched stay in because a site no earlier list names is held out wherever it sits.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

FOLDERS = ("vllm/model_executor", "vllm/v1/attention", "vllm/v1/worker",
           "vllm/v1/spec_decode", "vllm/lora")
HOOK = re.compile(r"process_weights_after_loading|post_load|_after_load")
STORE = re.compile(r"^\s*(self|layer)\.\w+(\[[^\]\n]*\])?\s*=(?!=)"
                   r"|\bsetattr\(|\bregister_buffer\(|\breplace_parameter\(", re.M)
LAZY = re.compile(r"\bif\s+(not\s+hasattr\((self|layer),|(self|layer)\.\w+\s+is\s+None\b"
                  r"|getattr\((self|layer),[^)\n]*,\s*None\)\s+is\s+None)")
TENSOR_STORE = re.compile(r"^\s*(self|layer)\.\w+(\[[^\]\n]*\])?\s*=\s*torch\.\w+\("
                          r"|\bregister_buffer\(", re.M)
HERE = Path(__file__).resolve().parent
EARLIER = ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v10b", "v11", "v12",
           "v13", "v13c", "v14")
V14_DRAW = HERE / "static_recall_file_v14_draw.json"
V14B_DRAW = HERE / "static_recall_file_v14b_draw.json"
V15_DRAW = HERE / "static_recall_file_v15_draw.json"
V16_DRAW = HERE / "static_recall_file_v16_draw.json"
V17_DRAW = HERE / "static_recall_file_v17_draw.json"


def site_packages() -> Path:
    import vllm

    return Path(vllm.__file__).resolve().parent.parent


def population(root: Path) -> list[str]:
    """The v14 population: a hook word and an attribute store."""
    out = []
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if HOOK.search(text) and STORE.search(text):
                out.append(path.relative_to(root).as_posix())
    return sorted(set(out))


def touched() -> set[str]:
    """Files holding a candidate key of an earlier list (v1..v14) or drawn by v14."""
    files = set(json.loads(V14_DRAW.read_text())["drawn"])
    for stage in EARLIER:
        data = json.loads((HERE / f"static_recall_outside_{stage}_vllm_0.33.json").read_text())
        for body in data["lists"].values():
            files.update(c["file"] for c in body["candidates"])
    return files


def population_untouched(root: Path) -> list[str]:
    """The v14b population: an attribute store and a hook word, lazy guard or tensor store."""
    skip = touched()
    out = []
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            if rel in skip or not STORE.search(text):
                continue
            if HOOK.search(text) or LAZY.search(text) or TENSOR_STORE.search(text):
                out.append(rel)
    return sorted(set(out))


def population_v15(root: Path) -> list[str]:
    """The v15 population: v14's, minus the files v14 and v14b drew."""
    drawn = {f for draw in (V14_DRAW, V14B_DRAW) for f in json.loads(draw.read_text())["drawn"]}
    return [f for f in population(root) if f not in drawn]


def population_v16(root: Path) -> list[str]:
    """The v16 population: v15's, minus the files v15 drew."""
    drawn = set(json.loads(V15_DRAW.read_text())["drawn"])
    return [f for f in population_v15(root) if f not in drawn]


def population_v17(root: Path) -> list[str]:
    """The v17 population: v16's, minus the files v16 drew."""
    drawn = set(json.loads(V16_DRAW.read_text())["drawn"])
    return [f for f in population_v16(root) if f not in drawn]


def population_v18(root: Path) -> list[str]:
    """The v18 population: v17's, minus the files v17 drew."""
    drawn = set(json.loads(V17_DRAW.read_text())["drawn"])
    return [f for f in population_v17(root) if f not in drawn]


POPULATIONS = {"v14": population, "untouched": population_untouched, "v15": population_v15,
               "v16": population_v16, "v17": population_v17, "v18": population_v18}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed-file", type=Path, help="JSON with fields seed and n")
    ap.add_argument("--population-only", action="store_true", help="print only the size")
    ap.add_argument("--population", choices=tuple(POPULATIONS), default="v14",
                    help="which population (default v14; untouched is v14b's; v15-v18 theirs)")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    import vllm

    untouched = ns.population == "untouched"
    pop = POPULATIONS[ns.population](site_packages())
    if ns.population_only:
        json.dump({"population": len(pop)}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    if ns.seed_file is None:
        ap.error("--seed-file or --population-only is required")
    spec = json.loads(ns.seed_file.read_text())
    drawn = random.Random(spec["seed"]).sample(pop, spec["n"])
    out = {"seed": spec["seed"], "n": spec["n"], "vllm": vllm.__version__,
           "folders": list(FOLDERS), "hook": HOOK.pattern, "store": STORE.pattern}
    if untouched:
        out |= {"population_name": "untouched", "lazy": LAZY.pattern,
                "tensor_store": TENSOR_STORE.pattern,
                "excluded": [f"static_recall_outside_{s}_vllm_0.33.json" for s in EARLIER]
                + [V14_DRAW.name]}
    elif ns.population == "v15":
        out |= {"population_name": "v15", "excluded": [V14_DRAW.name, V14B_DRAW.name]}
    elif ns.population == "v16":
        out |= {"population_name": "v16",
                "excluded": [V14_DRAW.name, V14B_DRAW.name, V15_DRAW.name]}
    elif ns.population == "v17":
        out |= {"population_name": "v17",
                "excluded": [V14_DRAW.name, V14B_DRAW.name, V15_DRAW.name, V16_DRAW.name]}
    elif ns.population == "v18":
        out |= {"population_name": "v18",
                "excluded": [V14_DRAW.name, V14B_DRAW.name, V15_DRAW.name, V16_DRAW.name,
                             V17_DRAW.name]}
    out |= {"population": len(pop), "drawn": drawn}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
