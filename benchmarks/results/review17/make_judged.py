"""Build a judged recall list (the v12 file's shape) from a raw draw and the reviewer's verdicts.

    PYTHONPATH=. python3 benchmarks/results/review17/make_judged.py STAGE DRAW_COMMIT > tests/resources/...
    (STAGE v13 or v13c; DRAW_COMMIT the list file's draw_rules_commit: 298f4d1, 8a46e26)

Quotes are the installed vLLM source lines named by each verdict (no hand-copied text)."""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RES = HERE.parent.parent.parent / "tests" / "resources"
sys.path.insert(0, str(HERE))
# the draw script by its path (a file of tests/resources, not an installed module)
_spec = importlib.util.spec_from_file_location("static_recall_outside_draw",
                                               RES / "static_recall_outside_draw.py")
draw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(draw)

V12 = RES / "static_recall_outside_v12_vllm_0.33.json"
DEFINITION = json.loads(V12.read_text())["definition"]


OWNER_PATHS = {"_factor_input_splits"}  # vllm_lilicorr.yaml declares its elements 0, 1, 2


def quote(root: Path, rel: str, line: int) -> str:
    text = (root / rel.removeprefix("vllm/")).read_text(encoding="utf-8").splitlines()[line - 1]
    return f"{rel}:{line} {text.strip()}"


def owner_class(root: Path, c: dict) -> str:
    """The class enclosing the store's function (what a spec's module_class would name)."""
    tree = draw._parse(root / c["file"].removeprefix("vllm/"))
    assert tree is not None
    best = ""
    for fn, cls in draw._functions_with_class(tree):
        if fn.lineno <= c["line"] <= (fn.end_lineno or fn.lineno):
            best = cls
    return best


def main(stage: str, draw_commit: str) -> int:
    verdicts = importlib.import_module(f"verdicts_{stage}").VERDICTS
    raw = json.loads((RES / f"static_recall_outside_{stage}_draw.json").read_text())
    (name, body), = raw["lists"].items()
    root = draw._vllm_root()
    by_key = {v[:3]: v for v in verdicts}
    order = [body["candidates"][j] for j in body["drawn_order"]]
    judged_keys = [(c["file"], c["line"], c["attr"]) for c in order[:len(verdicts)]]
    assert judged_keys == [v[:3] for v in verdicts], "verdicts must be a prefix of the drawn order"
    cands = []
    for c in body["candidates"]:
        key = (c["file"], c["line"], c["attr"])
        if key not in by_key:
            continue
        _, _, _, real, close, host, why, quotes = by_key[key]
        cands.append({**c, "real": real, "why": why, "close_call": close, "host_scalar": host,
                      "declared_by_spec": draw._declared(owner_class(root, c), c["attr"])
                      or c["attr"] in OWNER_PATHS,
                      "quotes": [quote(root, f, ln) for f, ln in quotes]})
    seed = json.loads((RES / f"static_recall_outside_seed_{stage}.json").read_text())
    cmd = (HERE / f"draw_command_{stage}.txt").read_text().strip()
    out = {"seed": raw["seed"], "n": raw["n"], "vllm": raw["vllm"],
           "tensor_only": raw["tensor_only"],
           "excluded": raw["excluded"], "rules_commit": "d647e9b", "draw_rules_commit": draw_commit,
           "definition": DEFINITION, "command": cmd, "judged": len(cands),
           "judged_rule": "a prefix of the drawn order (drawn_order), never a choice",
           "lists": {name: {"population": body["population"], "drawn": len(body["candidates"]),
                            "real": sum(c["real"] for c in cands),
                            "drawn_order": body["drawn_order"], "candidates": cands}}}
    assert seed["seed"] == raw["seed"]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
