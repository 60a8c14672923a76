"""Draw vLLM 0.33.0 source files for a held-out recall list that no audit rule proposes.

    python3 tests/resources/static_recall_file_draw.py --population-only
    python3 tests/resources/static_recall_file_draw.py \
        --seed-file tests/resources/static_recall_file_seed_v14.json

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


def site_packages() -> Path:
    import vllm

    return Path(vllm.__file__).resolve().parent.parent


def population(root: Path) -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if HOOK.search(text) and STORE.search(text):
                out.append(path.relative_to(root).as_posix())
    return sorted(set(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed-file", type=Path, help="JSON with fields seed and n")
    ap.add_argument("--population-only", action="store_true", help="print only the size")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    import vllm

    pop = population(site_packages())
    if ns.population_only:
        json.dump({"population": len(pop)}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    if ns.seed_file is None:
        ap.error("--seed-file or --population-only is required")
    spec = json.loads(ns.seed_file.read_text())
    drawn = random.Random(spec["seed"]).sample(pop, spec["n"])
    json.dump({"seed": spec["seed"], "n": spec["n"], "vllm": vllm.__version__,
               "folders": list(FOLDERS), "hook": HOOK.pattern, "store": STORE.pattern,
               "population": len(pop), "drawn": drawn}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
