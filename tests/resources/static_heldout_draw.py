"""Draw the held-out recall candidates of the static audit from the installed vLLM source.

    PYTHONPATH=. python3 tests/resources/static_heldout_draw.py --seed 2112 -n 20 > cands.json

Three lists, one per miss class of the outside review, each found by a fixed text rule over
every ``*.py`` file of the installed vLLM (sorted by path, then line) and sampled with
``random.Random(seed)``; the rules never look at what the audit reports. Every candidate is then
read at file:line and judged a real derived-tensor site or not; the judged copy is
static_heldout_vllm_0.33.json. The lists were drawn and judged before the rules changed.

* ``helpers``: a store on ``self``/``layer`` (or a tuple of them) of the result of a call that is
  not a bare ``torch.*`` allocation, in a function whose name says it runs after loading
  (``process_weights*``, ``*prepare*``, ``*pack*``, ``*post_load*``, ``*load_weights*``,
  ``*after_load*``, ``*finalize*``, ``*_repack*``, ``*_swizzle*``).
* ``lazy``: a guarded attribute cache: ``if <recv>._x is None`` / ``if not hasattr`` /
  ``getattr(<recv>, "_x", None) is None`` / ``if <recv>._x is not None`` (early return) guards,
  in a file under ``model_executor``, ``models``, ``v1/attention``, ``v1/spec_decode`` or
  ``v1/worker``, followed within the function by a store ``<recv>._x = `` whose line names a
  weight word (weight, scale, bias, lm_head, embed, norm, cat, stack, item, float).
* ``loaders``: stores in weight loaders and speculators: files under ``spec_decode``,
  ``worker`` or ``models``, function ``load_weights``/``*weight_loader*``/``*_load_*``/
  ``*propose*``/``*prepare*``/``*_weights*``/``*_buffers*``, storing ``self.x = `` (or
  ``layer.x``) a value whose line names a weight word or a ``torch.cat``/``stack``/``.t()``/
  ``.contiguous()``/``.clone()``/``.to(`` call.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

_FUNC_OK = re.compile(r"process_weights|prepare|pack|post_load|load_weights|after_load|finalize"
                      r"|_repack|_swizzle")
_STORE_CALL = re.compile(r"^\s*((?:self|layer)\.\w+(?:\s*,\s*(?:self|layer)\.\w+)*)\s*(?::[^=]*)?="
                         r"\s*(?!torch\.(?:empty|zeros|ones|full|tensor)\b)([\w.]+)\(")
_GUARD = re.compile(r"^\s*if\s+(?:not\s+hasattr\((\w+),\s*[\"'](\w+)[\"']\)|(\w+)\.(\w+)\s+is\s+"
                    r"(?:not\s+)?None|getattr\((\w+),\s*[\"'](\w+)[\"'],\s*None\)\s+is\s+None)")
_LOADER_FUNC = re.compile(r"load_weights|weight_loader|_load_|propose|prepare|_weights|_buffers")
_LOADER_STORE = re.compile(r"^\s*(?:self|layer)\.\w+\s*(?::[^=]*)?=[^=]\s*.*(?:torch\.(?:cat|stack)"
                           r"\(|\.t\(\)|\.contiguous\(\)|\.clone\(\)|\.to\(|weight|scale|bias)")
_LAZY_DIRS = re.compile(r"vllm/(?:model_executor|models|v1/attention|v1/spec_decode|v1/worker)/")
_WEIGHT_WORD = re.compile(r"weight|scale|bias|lm_head|embed|norm|cat\(|stack\(|item\(|float\(")
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")


def _functions(lines: list[str]) -> list[str]:
    """The enclosing function name of every line ('' at module level)."""
    out, stack = [], []
    for text in lines:
        m = _DEF.match(text)
        indent = len(text) - len(text.lstrip())
        if text.strip():
            while stack and indent <= stack[-1][0] and not m:
                stack.pop()
        if m:
            while stack and len(m.group(1)) <= stack[-1][0]:
                stack.pop()
            stack.append((len(m.group(1)), m.group(2)))
        out.append(stack[-1][1] if stack else "")
    return out


def candidates(root: Path) -> dict[str, list[dict[str, object]]]:
    """Every candidate of the three rules, sorted by file and line."""
    lists: dict[str, list[dict[str, object]]] = {"helpers": [], "lazy": [], "loaders": []}
    for path in sorted(root.rglob("*.py")):
        rel = "vllm/" + path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        funcs = _functions(lines)
        for i, text in enumerate(lines):
            fn = funcs[i]
            m = _STORE_CALL.match(text)
            if m and _FUNC_OK.search(fn):
                lists["helpers"].append({"file": rel, "line": i + 1, "function": fn,
                                         "text": text.strip()})
            g = _GUARD.match(text)
            if g and _LAZY_DIRS.match(rel):
                recv = g.group(1) or g.group(3) or g.group(5)
                attr = g.group(2) or g.group(4) or g.group(6)
                for j in range(i + 1, min(i + 40, len(lines))):
                    t = lines[j]
                    if funcs[j] != fn:
                        break
                    if (re.match(rf"^\s*{recv}\.{attr}\s*(?::[^=]*)?=[^=]", t)
                            and _WEIGHT_WORD.search(t)):
                        lists["lazy"].append({"file": rel, "line": j + 1, "function": fn,
                                              "text": t.strip()})
                        break
            if (("spec_decode" in rel or "/worker/" in rel or "/models/" in rel)
                    and _LOADER_FUNC.search(fn) and _LOADER_STORE.match(text)):
                lists["loaders"].append({"file": rel, "line": i + 1, "function": fn,
                                         "text": text.strip()})
    return lists


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2112)
    parser.add_argument("-n", type=int, default=20)
    args = parser.parse_args(argv)
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("vllm is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    rng = random.Random(args.seed)
    out = {"seed": args.seed, "n": args.n, "lists": {}}
    for name, pool in candidates(root).items():
        picked = rng.sample(pool, min(args.n, len(pool)))
        out["lists"][name] = {"population": len(pool),
                              "sample": sorted(picked, key=lambda c: (c["file"], c["line"]))}
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
