"""CPU-only code paths: where vLLM 0.33 captures no device graph, so a rebind is not stale.

On the CPU platform vLLM captures no CUDA, HIP or XPU graph: a reader that looks the attribute
up on every call sees what the rerun post-load step stored, so a rebind there is not stale.
:func:`cpu_only` names the first signal that a site's store or its reader runs only on the CPU
platform, or returns None:

* the storing class or one of its ancestors is named for the CPU (``CPUFooKernel``) or for a
  CPU-only instruction set (AMX);
* the storing function's signature (its name, parameter or return annotations) is;
* the store sits under a CPU platform test (``if current_platform.is_cpu():``, also after
  ``if not ...is_cpu(): return``);
* the scanned file's path names the CPU (``.../cpu.py``, ``cpu/``, ``cpu_*.py``);
* the reader's function, or the call the reader's line is an argument of, is a CPU op
  (``bmm_cpu(...)``).

A site whose signals also name XPU is never CPU-only (XPU graphs exist with torch >= 2.11), and
neither is CPU offloading (a GPU feature that keeps weights in host memory).

A CPU-only site still goes stale when a kernel-format reload refills a kept source parameter
but not the copy built from it (``self._s32 = self.w_scale.float()``). :func:`source_dropped`
tells the cases where no such reload can leave it stale: the value derives from no kept
attribute, or the source parameter is emptied (``torch.empty(0)``), so a reload into it fails
instead; not when the step empties it only under ``if flag:`` and some caller passes
``flag=False`` (:func:`kept_by_a_caller`): that caller's source stays refillable; nor when the
store's branch returns before any emptying (:func:`empties_on_path`: an unpacked copy kept next to
a weight packed in place, whose branch ends in ``return`` above the other branches' emptying).

A CPU-only site stays loud when the step cannot rerun: :func:`rerun_guard` finds a flag the
storing function sets (``layer._done = True``) that the file tests with an early return
(``if getattr(layer, "_done", False): return``) and the engine's reload code does not
delete before the rerun (as vLLM 0.33 deletes ``_already_called_process_weights_after_loading``).
A reload then reruns the post-load step, which
returns at once: the copy keeps the first weights. Where that step also empties the source
parameters it reads (:func:`empties_source`), no reload gets that far: the layerwise copy-back
of the checkpoint's shape into the emptied parameter raises, and so does a kernel-format
``copy_``; the site is then not stale (a loud failure) and the rule of the emptied source
applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["cpu_only", "empties_on_path", "empties_source", "kept_by_a_caller", "names_cpu",
           "rerun_guard", "reset_flags", "source_dropped"]

_CPU = re.compile(r"(?<![a-z])(?:cpu|amx)(?![a-z])|(?<![A-Z])(?:CPU|AMX)|(?:Cpu|Amx)(?![a-z])")
_XPU = re.compile(r"(?<![a-z])xpu(?![a-z])|(?<![A-Z])XPU|Xpu(?![a-z])")
_OFFLOAD = re.compile(r"offload", re.I)
_CPU_TEST = re.compile(r"\bis_\w*cpu\w*\(\)")
_IF = re.compile(r"^([ \t]*)(?:el)?if\b(.*)$")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\($")
_EMPTIED = re.compile(r"\b(?:new_)?empty\(\s*\(?0\s*[,)]")
_KEPT = re.compile(r"^(?:self|layer)((?:\.\w+)+)$")
_DEF_HEAD = re.compile(r"\s*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(([^)]*)\)")
_PARAM_NAME = re.compile(r"^(?:w\d*|w13\w*|w2\w*|\w*weight\w*|\w*scale\w*|\w*bias\w*)$")


def names_cpu(text: str) -> bool:
    """Whether a name (or a few names) marks CPU-only code and no XPU or offloading."""
    return bool(_CPU.search(text)) and not _XPU.search(text) and not _OFFLOAD.search(text)


_HEADER_END = re.compile(r"\)[ \t]*(?:->[^\n]*?)?:[ \t]*(?:#[^\n]*)?$", re.M)


def _signature(body: str) -> str:
    """The ``def`` line(s) of a function's text, up to the colon that opens its body, without
    comments."""
    end = _HEADER_END.search(body)
    header = body[:end.end()] if end else body.split("\n", 1)[0]
    return re.sub(r"#[^\n]*", "", header)


def _under_cpu_test(body: str, offset: int) -> bool:
    """Whether line ``offset`` (0-based) of ``body`` sits under ``if ...is_cpu():`` or after
    ``if not ...is_cpu(): return``."""
    lines = body.splitlines()
    if not 0 <= offset < len(lines):
        return False
    indent = len(lines[offset]) - len(lines[offset].lstrip())
    for i in range(offset - 1, 0, -1):
        text = lines[i]
        if not text.strip():
            continue
        own = len(text) - len(text.lstrip())
        m = _IF.match(text)
        if m is None or not _CPU_TEST.search(m.group(2)) or _XPU.search(m.group(2)):
            if own < indent:
                indent = own
            continue
        negated = re.match(r"\s*not\b", m.group(2)) is not None
        if own < indent and not negated:
            return True
        if negated and own <= indent and _returns(lines, i, own):
            return True
        indent = min(indent, own)
    return False


def _returns(lines: list[str], at: int, indent: int) -> bool:
    """Whether the block opened by the ``if`` at line ``at`` ends in ``return`` or ``raise``."""
    last = ""
    for text in lines[at + 1:]:
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        if text.strip():
            last = text.strip()
    return last.startswith(("return", "raise"))


def _reader_calls(reader_lines: list[str]) -> list[str]:
    """The callees the reader's line calls, or the call it is an argument line of (the
    nearest earlier line that opens one: ``ops.bmm_cpu(``)."""
    if not reader_lines:
        return []
    found = re.findall(r"([A-Za-z_][\w.]*)\s*\(", reader_lines[0])
    if found:
        return found
    for text in reader_lines[1:]:
        m = _CALL.search(text.rstrip())
        if m:
            return [m.group(1)]
    return []


def cpu_only(file: str, lineage: Iterable[str], body: str, store_offset: int,
             reader_function: str | None, reader_context: list[str]) -> str | None:
    """Why a site runs only on the CPU platform (see the module docstring), or None.

    ``body`` is the storing function's text and ``store_offset`` the store's line in it;
    ``reader_context`` is the reader's line and the lines before it, nearest first."""
    cpu_classes = sorted(c for c in lineage if names_cpu(c))
    if cpu_classes:
        return f"stored by a CPU-only class ({cpu_classes[0]})"
    signature = _signature(body)
    if signature and names_cpu(signature):
        return f"stored by a CPU-only function ({' '.join(signature.split())[:80]})"
    if body and _under_cpu_test(body, store_offset):
        return "stored under a CPU platform test"
    parts = re.split(r"[/\\]", file)
    if any(names_cpu(p.removesuffix(".py")) for p in parts[-3:]):
        return f"in a CPU-only module ({file})"
    if reader_function and names_cpu(reader_function.rsplit(".", 1)[-1]):
        return f"read by a CPU-only function ({reader_function})"
    for callee in _reader_calls(reader_context):
        if names_cpu(callee.rsplit(".", 1)[-1]):
            return f"read by a CPU op ({callee})"
    return None


_EMPTY_0 = re.compile(r"empty\(\s*\(?0\s*[,)]")
"""A 0-element allocation: the text test before the per-module search of :func:`source_dropped`."""


def source_dropped(derives_from: str | None, body: str,
                   tree: Mapping[str, str], at: int | None = None, *,
                   allocates: dict[str, bool] | None = None,
                   emptied: dict[str, str | None] | None = None) -> str | None:
    """Why no kernel-format reload can leave a CPU-only value stale, or None when one can: it
    derives from no kept attribute (``self.x``/``layer.x``), or its storing function empties a
    parameter, or the submodule it derives from has its parameter emptied somewhere in the tree
    (``tree``: display path -> text), so a reload into that parameter fails on its shape.
    ``at``: the store's line in ``body`` (0-based), for :func:`kept_by_a_caller`.
    ``allocates``: the caller's memo of each file's 0-element allocation test
    (:data:`_EMPTY_0`; display path -> found), kept for one evidence pass: each call tests
    every file that names its module. ``emptied``: the caller's memo of that search's answer
    per module (module -> this function's answer), kept for the same pass: findings of one
    module (``self.kv_b_proj.weight``, ``layer.weight``) ask it again and again."""
    m = _KEPT.match((derives_from or "").strip())
    if m is None:
        return "it derives from no kept attribute"
    if empties_source(body) and (at is None or (
            empties_on_path(body, at) and kept_by_a_caller(body, tree, at) is None)):
        return "its step empties the parameter it reads"
    segments = m.group(1).strip(".").split(".")
    module = segments[-1] if not _PARAM_NAME.match(segments[-1]) else (
        segments[-2] if len(segments) > 1 else None)
    if module is None:
        return None
    memo = {} if allocates is None else allocates
    if emptied is None:
        return _emptied_in_tree(module, tree, memo)
    if module not in emptied:
        emptied[module] = _emptied_in_tree(module, tree, memo)
    return emptied[module]


def _emptied_in_tree(module: str, tree: Mapping[str, str], memo: dict[str, bool]) -> str | None:
    """Where the tree empties a parameter of submodule ``module`` (the first such line, files
    in ``tree``'s order), as :func:`source_dropped`'s answer, or None; ``memo``: each file's
    0-element allocation test (display path -> found)."""
    # ``\b<module>\b ... empty(0`` on one line, written from the literal name (``module`` is a
    # word, see :data:`_KEPT`; the boundary before it looked behind after it), so that a
    # search skips to each occurrence instead of trying every position
    name = re.escape(module)
    line = re.compile(rf"{name}(?<!\w{name})\b[^\n]*\b(?:new_)?empty\(\s*\(?0\s*[,)]")
    for display, text in tree.items():
        if module not in text:
            continue
        found = memo.get(display)
        if found is None:
            found = memo[display] = _EMPTY_0.search(text) is not None
        hit = line.search(text) if found else None
        if hit:
            return (f"`{module}`'s parameter is emptied at "
                    f"{display}:{text.count(chr(10), 0, hit.start()) + 1}: a reload into it "
                    "raises (0 elements, not the checkpoint's shape) instead of leaving this "
                    "stale")
    return None


def _follows_on_path(body: str, lines: list[str], at: int) -> bool:
    """Whether an emptying follows the store on line ``at`` before a ``return``/``raise`` at
    the store's indent or less ends its branch."""
    after = sum(len(line) + 1 for line in lines[:at + 1])
    first = next((m for m in _EMPTIED.finditer(body) if m.start() >= after), None)
    if first is None:
        return False
    indent = len(lines[at]) - len(lines[at].lstrip(" \t"))
    return not any(re.match(rf"[ \t]{{0,{indent}}}(?:return|raise)\b", line)
                   for line in body[after:first.start()].split("\n"))


def empties_on_path(body: str, at: int) -> bool:
    """Whether an emptying of a parameter lies on the path of the store on line ``at`` (0-based
    in ``body``): one precedes the store, or one follows it before its branch returns. False
    when the store's branch returns first (``layer.copy = unpacked; layer.weight.data =
    pack(unpacked); return`` above ``if remove: layer.weight = P(torch.empty(0))``): the source
    stays a full parameter there, which a kernel-format reload refills."""
    lines = body.split("\n")
    if not 0 <= at < len(lines):
        return True
    before = sum(len(line) + 1 for line in lines[:at])
    return any(m.start() < before for m in _EMPTIED.finditer(body)) or _follows_on_path(
        body, lines, at)


def kept_by_a_caller(body: str, tree: Mapping[str, str], at: int) -> str | None:
    """``display:line`` of a call passing ``flag=False`` to the step ``body`` when the store on
    line ``at`` (0-based in ``body``) is followed, on its own path, by an emptying of the source
    only under ``if flag:`` (a parameter of the step): that caller's source stays a full
    parameter, which a kernel-format reload refills while the value built from it goes stale
    (``dispatch_cpu_unquantized_gemm(layer, remove_weight=False)`` for an embedding's CPU
    GEMM). None when the step empties it unconditionally, every caller sets the flag, or the
    store's branch returns before the emptying."""
    head = _DEF_HEAD.match(body)
    lines = body.split("\n")
    if head is None or not 0 <= at < len(lines):
        return None
    if not _follows_on_path(body, lines, at):
        return None  # no emptying on the store's own path
    params = set(re.findall(r"(\w+)[ \t]*[:=,)]", head.group(2) + ")"))
    flags = set()
    for m in _EMPTIED.finditer(body):
        flag = _guarding_flag(body, m.start(), params)
        if flag is None:
            return None  # emptied whatever the caller passes
        flags.add(flag)
    for flag in sorted(flags):
        call = re.compile(rf"\b{re.escape(head.group(1))}\([^()]*\b{flag}[ \t]*=[ \t]*False\b")
        for display, text in tree.items():
            hit = call.search(text) if head.group(1) in text else None
            if hit:
                return f"{display}:{text.count(chr(10), 0, hit.start()) + 1}"
    return None


def _guarding_flag(body: str, at: int, params: set[str]) -> str | None:
    """The parameter ``p`` of the nearest enclosing ``if p:`` around offset ``at``, or None."""
    lines = body[:at].split("\n")
    limit = len(lines[-1]) - len(lines[-1].lstrip(" \t"))
    for line in reversed(lines[:-1]):
        stripped = line.lstrip(" \t")
        indent = len(line) - len(stripped)
        if not stripped or stripped.startswith("#") or indent >= limit:
            continue
        limit = indent
        if stripped.startswith(("def ", "async def ")):
            return None
        m = re.match(r"if[ \t]+(\w+)[ \t]*:", stripped)
        if m and m.group(1) in params:
            return m.group(1)
    return None


def empties_source(body: str) -> bool:
    """Whether a step's text empties a parameter (``p.data = torch.empty(0)``)."""
    return _EMPTIED.search(body) is not None


_DELATTR = re.compile(r"\bdelattr\(\s*\w+\s*,\s*[\"'](\w+)[\"']\s*\)")
_SETS_FLAG = re.compile(r"^[ \t]*(?:self|layer)\.(\w+)[ \t]*=[ \t]*True\b", re.M)


def reset_flags(machinery: Iterable[str]) -> frozenset[str]:
    """The flags the engine's reload code deletes before rerunning post-load steps
    (``delattr(layer, "_already_called_process_weights_after_loading")``)."""
    return frozenset(f for text in machinery for f in _DELATTR.findall(text))


def rerun_guard(body: str, text: str, reset: frozenset[str] = frozenset()) -> str | None:
    """The flag that makes a rerun of the storing step return early, or None: ``body`` (the
    storing function) sets ``self.F``/``layer.F = True`` and ``text`` (its file) tests it
    with a bare early return (``if getattr(x, "F", False): return`` or ``if x.F: return``),
    and the reload machinery does not reset it (``reset``, :func:`reset_flags`)."""
    for flag in dict.fromkeys(f for f in _SETS_FLAG.findall(body) if f not in reset):
        f = re.escape(flag)
        test = rf"(?:getattr\(\s*\w+\s*,\s*[\"']{f}[\"'][^)]*\)|\w+\.{f}\b)"
        if re.search(rf"^[ \t]*if[ \t]+{test}[ \t]*:[ \t]*\n[ \t]*return[ \t]*$", text, re.M):
            return flag
    return None
