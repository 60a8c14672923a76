"""The reader of a config container: where the class that keeps such configs reads a tensor.

A config of tensors stored by post-load code (``self.moe_quant_config =
self.get_fused_moe_quant_config(layer)``) is rarely read as a whole after load: it is handed to
a kernel object's constructor, which keeps it (``def __init__(self, quant_config: QuantConfig):
self.quant_config = quant_config``), and the kernels read its fields through that attribute,
often by an accessor of their common base class (``return self.quant_config.w1_scale``). The
reader named for such a finding is that read in the class that keeps the config's type and has
the most subclasses (the base every consumer shares), of the first field the builder fills from
a weight (``w1_scale=layer.w13_weight_scale``, or a local of the builder bound to one) that the
keeper reads; the weight named for the finding is that field's (the first weight field's when
the keeper reads none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from derivgraph.audit.static.def_text import def_text
from derivgraph.audit.static.readers import Reader, ReaderIndex, derives_from

__all__ = ["ConfigEvidence", "config_reader"]

_CALLEE = re.compile(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*\(")
_KEYWORD = re.compile(r"(?<![=!<>\w])([a-z_]\w*)[ \t]*=(?!=)[ \t]*([^,\n]+)")
_NAMED_GETATTR = re.compile(
    r"\bgetattr\(\s*([A-Za-z_][\w.]*)\s*,\s*f[\"'](\w*)\{(?:[\w.]*\.)?(\w+)_name\}(\w*)[\"']\s*\)")
"""``getattr(layer, f"w13_{self.weight_scale_name}")``: read as ``layer.w13_weight_scale`` (a
``*_name`` attribute holds the name of the attribute it stands for)."""
_RETURNS = re.compile(r"->\s*[\"']?(?:Optional\[)?([A-Z]\w*)")


class ConfigEvidence(NamedTuple):
    """What a config builder tells about the stored config: the keeper's read of the first
    field filled from a weight that it reads, and that field's weight (no read: None and the
    first such field's weight)."""

    reader: Reader | None
    weight: str


def config_reader(index: ReaderIndex, expr: str, text: str, cls: str | None,
                  family: Callable[[str], frozenset[str]],
                  keepers: dict[frozenset[str], tuple[str, str] | None]) -> ConfigEvidence | None:
    """The keeper's read of the stored config and the weight it holds (module docstring), or
    None when the config's type or a field filled from a weight is not found.

    ``expr`` is the stored value, ``text`` the storing file's source, ``cls`` the storing
    class; ``keepers`` caches the keeper found per set of type names."""
    m = _CALLEE.match(expr)
    if m is None:
        return None
    name = m.group(1)
    if expr.lstrip().startswith("self."):  # a method of the storing class
        body = re.search(rf"^class[ \t]+{re.escape(cls)}\b", text, re.M) if cls else None
        builder = def_text(text[body.start():_next_class(text, body.end())], name) \
            if body else ""
    else:  # a function of any file
        builder = next((d for _, t in index.files if f"def {name}(" in t
                        for d in [def_text(t, name)] if d), "")
    if name[:1].isupper():  # a constructor: the type is its class
        kinds, builder = family(name), ""
    else:
        ret = _RETURNS.search(builder[:builder.find(":\n") + 1] if builder else "")
        if ret is None:
            return None
        kinds = family(ret.group(1))
    # the call's own keywords, then the builder's (its locals followed back to a weight)
    builder = _NAMED_GETATTR.sub(r"\1.\2\3\4", builder)
    fields = [(k.group(1), weight) for source, body in ((expr, ""), (builder, builder))
              for k in _KEYWORD.finditer(source)
              for weight in [derives_from(k.group(2), body, k.group(1))] if weight]
    if not fields:
        return None
    if kinds not in keepers:
        keepers[kinds] = _keeper(index.files, kinds, family)
    keeper = keepers[kinds]
    reads = ((index.accessor_read(*keeper, field), weight) for field, weight in fields) \
        if keeper else ()
    return next((ConfigEvidence(r, weight) for r, weight in reads if r is not None),
                ConfigEvidence(None, fields[0][1]))


def _keeper(files: Sequence[tuple[str, str]], kinds: frozenset[str],
            family: Callable[[str], frozenset[str]]) -> tuple[str, str] | None:
    """``(class, attribute)`` of the class keeping a constructor argument annotated with one of
    ``kinds`` on ``self`` that has the largest family (ties: the first in the scan order)."""
    if not kinds:
        return None
    alt = "|".join(map(re.escape, sorted(kinds)))
    param = re.compile(rf"[(,][ \t\n]*(\w+)[ \t]*:[ \t]*(?:Optional\[)?(?:{alt})\b")
    best: tuple[int, str, str] | None = None
    for _, text in files:
        if not any(k in text for k in kinds):
            continue
        for cls in re.finditer(r"^class[ \t]+(\w+)", text, re.M):
            body = text[cls.start():_next_class(text, cls.end())]
            if not any(k in body for k in kinds):
                continue  # no parameter of the class can be annotated with one of ``kinds``
            init = def_text(body, "__init__")
            header = init[:init.find(":\n")]
            for p in param.finditer(header):
                kept = re.search(rf"^[ \t]+self\.(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*{p.group(1)}"
                                 r"[ \t]*$", init, re.M)
                size = len(family(cls.group(1)))
                if kept and (best is None or size > best[0]):
                    best = (size, cls.group(1), kept.group(1))
    return best[1:] if best else None


def _next_class(text: str, pos: int) -> int:
    m = re.compile(r"^\S", re.M).search(text, pos)
    while m and text.startswith(("#", "@", ")"), m.start()):
        m = re.compile(r"^\S", re.M).search(text, m.end())
    return m.start() if m else len(text)
