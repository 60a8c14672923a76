"""The text readers scan37 rewrote, run over every file of vLLM 0.33.0 and the standard library
in the tree on PYTHONPATH; prints a digest per reader (compare two trees' outputs):
    PYTHONPATH=TREE python3 benchmarks/results/scan37/text_readers_same.py
"""
import hashlib
import pathlib
import sysconfig

import vllm

from derivgraph.audit.static import index as I
from derivgraph.audit.static import segments as S

roots = [pathlib.Path(vllm.__file__).parent, pathlib.Path(sysconfig.get_paths()["stdlib"])]
texts = []
for root in roots:
    for p in sorted(root.rglob("*.py")):
        try:
            texts.append((str(p), p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            pass


def canonical(value):
    """A repr that does not depend on set order or object identity."""
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    if isinstance(value, dict):
        return [(canonical(k), canonical(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        fields = value.__dataclass_fields__
        return [type(value).__name__, *(canonical(getattr(value, f)) for f in fields)]
    return repr(value)


name_calls = getattr(S, "_name_calls", None) or S._NAME_CALL.findall
out = {"split_blocks": [], "class_text": [], "name_calls": [], "self_calls": [], "scan_file": [],
       "placeholder_after_def": []}
for n, (_path, text) in enumerate(texts):
    blocks = S.split_blocks(text)
    out["split_blocks"].append([(b.kind, b.name, b.start, b.end, b.line) for b in blocks])
    for b in blocks:
        piece = text[b.start:b.end]
        out["name_calls"].append(name_calls(piece))
        out["self_calls"].append(S._SELF_CALL.findall(piece))
        if b.kind == "class":
            shape = S._ClassText.of(piece)
            out["class_text"].append(None if shape is None else (shape.indent, shape.methods))
    found = I.scan_file(n, "m", text)
    out["scan_file"].append(canonical((found.classes, found.tensor_functions, found.index)))
    for m in I._DEF_RE.finditer(text):  # the bounded search of _returns_placeholder_text
        end = I.DEF_HEADER_END.search(text, m.end())
        for start in (m.end(), end.end() if end else m.end()):
            stop = I._next_col0(text, start)
            out["placeholder_after_def"].append(I._PLACEHOLDER_HINT.search(text, start, stop)
                                                is not None)
print("files", len(texts))
for key, value in out.items():
    print(key, len(value), hashlib.sha256(repr(canonical(value)).encode()).hexdigest()[:16])
