"""Share of each scan phase's CPU that is ast.parse, and of that, parses of text an earlier
phase already parsed (same file and same source string, or same file at all).

Serial (jobs=1) so every parse happens in this process:
PYTHONPATH=<tree> python3 benchmarks/results/scan34/reparse_share.py
"""
import ast
import hashlib
import time
from collections import defaultdict

import derivgraph.audit.static.scan as S

phase = ["import"]
rounds = [0]
parse_t = defaultdict(float)          # phase -> parse seconds
parse_n = defaultdict(int)
same_src_t = defaultdict(float)       # phase -> seconds parsing a string an earlier phase parsed
same_file_t = defaultdict(float)      # phase -> seconds parsing in a file an earlier phase parsed
phase_t = defaultdict(float)
seen_src: dict[bytes, str] = {}
seen_file: dict[str, str] = {}
_parse = ast.parse


def parse(source, filename="<unknown>", *a, **k):
    s = time.process_time()
    out = _parse(source, filename, *a, **k)
    d = time.process_time() - s
    p = phase[0]
    parse_t[p] += d
    parse_n[p] += 1
    if isinstance(source, str) and a == () and k.get("mode", "exec") == "exec":
        h = hashlib.blake2b(source.encode(), digest_size=16).digest()
        if filename == "<unknown>":  # a whole file parsed without its name (source_tree)
            filename = whole.get(h, filename)
        if seen_src.get(h, p) != p:
            same_src_t[p] += d
        seen_src.setdefault(h, p)
        if seen_file.get(filename, p) != p:
            same_file_t[p] += d
        seen_file.setdefault(filename, p)
    return out


ast.parse = parse
whole: dict[bytes, str] = {}
for src in S.collect_files((), "vllm"):
    t = src.path.read_text(encoding="utf-8")
    whole[hashlib.blake2b(t.encode(), digest_size=16).digest()] = src.display


def wrap(name, label):
    f = getattr(S, name)

    def w(*a, **k):
        if label == "_run":
            rounds[0] += 1
            p = f"round{rounds[0]}" if rounds[0] <= 3 else "round4+"
        else:
            p = label
        old = phase[0]
        phase[0] = p
        s = time.process_time()
        try:
            return f(*a, **k)
        finally:
            phase_t[p] += time.process_time() - s
            phase[0] = old
    setattr(S, name, w)


for n in ["tree_facts", "_run", "_mark_built_once", "apply_evidence", "resolve_forwarded",
          "mark_reload_skipped"]:
    wrap(n, n)
phase[0] = "other"
t = time.process_time()
r = S.scan(package="vllm", jobs=1)
total = time.process_time() - t
print(f"findings {len(r.findings)}  scan CPU {total:.2f} s (jobs=1)")
print(f"{'phase':20s} {'cpu':>6s} {'parse':>6s} {'n':>6s} {'same-src':>8s} {'same-file':>9s}")
for p in sorted(set(phase_t) | set(parse_t), key=lambda p: -phase_t.get(p, 0)):
    print(f"{p:20s} {phase_t.get(p, 0):6.2f} {parse_t[p]:6.2f} {parse_n[p]:6d} "
          f"{same_src_t[p]:8.2f} {same_file_t[p]:9.2f}")
