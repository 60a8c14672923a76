"""A read that only looks a tensor up for a helper's caller is followed to the caller's use.

``w = getattr(layer.conv1d, "_unpacked", None)`` ... ``return w`` in a helper does not consume
the tensor: the helper's caller does (``conv_weights = helper(layer)`` then
``conv1d(x, weight=conv_weights)``). :func:`returned_lookup` names the first call, after such a
binding in the same file, that takes the caller's local as an argument.
"""

from __future__ import annotations

import re

from derivgraph.audit.static.def_text import def_text
from derivgraph.audit.static.readers import NOT_READERS, Reader, ReaderIndex, ReaderKind

__all__ = ["returned_lookup"]

_BOUND = re.compile(r"(\w+)[ \t]*=(?!=)")
_KERNEL_WORD = re.compile(r"\b(?:torch\.ops\.|ops\.|F\.|kernel|triton|conv|gemm|mm\(|matmul"
                          r"|linear|fused)", re.I)


def returned_lookup(index: ReaderIndex, reader: Reader) -> Reader:
    """The call that consumes what the reader's function returns, when the reader only binds
    the local that function returns (module docstring); else ``reader``."""
    bound = _BOUND.match(reader.text)
    text = index.text(reader.file)
    func = reader.function.rsplit(".", 1)[-1]
    at = index.file_at(reader.file)
    if bound is None or at is None or "." in reader.function:
        return reader  # a method: its callers go through receivers this text search misses
    local = re.escape(bound.group(1))
    if not re.search(rf"^[ \t]+return[ \t]+{local}[ \t]*$", def_text(text, func, ""), re.M):
        return reader
    for call in re.finditer(rf"^([ \t]+)(\w+)[ \t]*=(?!=)[^\n]*(?<![\w.]){re.escape(func)}\(",
                            text, re.M):
        cls, funcs = index.enclosing(at, call.start() + 1)
        if not funcs or funcs[-1] == func or any(NOT_READERS.match(f) for f in funcs):
            continue
        end = re.compile(r"^\S", re.M).search(text, call.end())
        scope = text[call.end():end.start() if end else len(text)]
        use = re.search(rf"(?:[(,][ \t]*|(?<![=!<>])=[ \t]*){call.group(2)}[ \t]*[,)\n]", scope)
        if use is None:
            continue
        pos = call.end() + use.start()
        line_start = text.rfind("\n", 0, pos) + 1
        line = text[line_start:text.find("\n", pos)].strip()
        kind = ReaderKind.KERNEL_CALL if _KERNEL_WORD.search(line) else ReaderKind.FORWARD
        name = ".".join(x for x in (cls, *funcs) if x)
        return Reader(reader.file, text.count("\n", 0, pos) + 1, name, kind, line[:160],
                      reader.handed)
    return reader
