"""The reader of a config container: where the class that keeps such configs reads a tensor.

A config of tensors stored by post-load code (``self.moe_quant_config =
self.get_fused_moe_quant_config(layer)``) is rarely read as a whole after load: it is handed to
a kernel object's constructor, which keeps it (``def __init__(self, quant_config: QuantConfig):
self.quant_config = quant_config``), and the kernels read its fields through that attribute,
often by an accessor of their common base class (``return self.quant_config.w1_scale``). The
reader named for such a finding is that read in the class that keeps the config's type and has
the most subclasses (the base every consumer shares), of the first field the builder fills from
a weight (``w1_scale=layer.w13_weight_scale``, or a local of the builder bound to one) that the
keeper reads, followed, when it is an accessor property, to the call that consumes it
(:meth:`.readers.ReaderIndex.accessor_read`) among the classes tied to the config's
construction (:func:`.selection.serving_classes`: those the storing class's selector can
build and that can serve the config, else those the module building the config defines or
imports; none tied: the accessor is kept); the weight named for the finding is that field's
(the first weight field's when the keeper reads none).

A builder is not the reader of what it puts into its config: :func:`built_reader` follows a
builder's read (``w1_scale = self.w13_precision_config`` in a method annotated ``-> QuantConfig``)
and a store into a field of the config a builder returns (``quant_config._w2.bias = w2_bias``)
through the config's type to the keeper's read of that field, the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from derivgraph.audit.static.computed_after_load import computed_weight, preferrer
from derivgraph.audit.static.def_text import def_text
from derivgraph.audit.static.handed_reader import config_field_read
from derivgraph.audit.static.readers import Reader, ReaderIndex, derives_from
from derivgraph.audit.static.selection import Construction, serving_classes

__all__ = ["ConfigEvidence", "built_reader", "config_reader", "tree_def_text"]

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
                  keepers: dict[frozenset[str], tuple[str, str] | None],
                  attr: str = "", method: str = "") -> ConfigEvidence | None:
    """The keeper's read of the stored config and the weight it holds (module docstring), or
    None when the config's type or a field filled from a weight is not found.

    ``expr`` is the stored value (as ``self.<attr>``), ``text`` the storing file's source,
    ``cls`` the storing class, ``method`` the storing method; ``keepers`` caches the keeper
    found per set of type names."""
    m = _CALLEE.match(expr)
    if m is None:
        return None
    name = m.group(1)
    if expr.lstrip().startswith("self."):  # a method of the storing class
        builder = _method_text(text, cls, name)
    else:  # a function of any file
        builder = tree_def_text(index, name)
    if name[:1].isupper():  # a constructor: the type is its class
        kinds, builder = family(name), ""
    else:
        ret = _RETURNS.search(builder[:builder.find(":\n") + 1] if builder else "")
        if ret is None:
            return None
        kinds = family(ret.group(1))
    # the call's own keywords, then the returned config call's, then the builder's other ones
    # (its locals followed back to a weight); a field holding an attribute that is neither a
    # parameter nor computed after load (``gemm1_alpha=layer.swiglu_alpha``, a constructor's
    # constant) last; when no field holds a loaded one and the builder only wraps a helper of
    # another file, the helper's fields that do come first
    prefer = preferrer(index)
    builder = _NAMED_GETATTR.sub(r"\1.\2\3\4", builder)
    fields = _fields(((expr, ""), (_returned_call(builder), builder), (builder, builder)), prefer)
    if builder and not any(computed_weight(index, w) for _, w in fields):
        helper = _wrapped_helper(index, builder)
        fields = [f for f in _fields([(helper, helper)], prefer)
                  if computed_weight(index, f[1])] + fields
    fields.sort(key=lambda f: _constant(index, f[1]))
    if not fields:
        return None
    if kinds not in keepers:
        keepers[kinds] = _keeper(index.files, kinds, family)
    keeper = keepers[kinds]
    tied, default = serving_classes(index, name if not expr.lstrip().startswith("self.")
                                    and not name[:1].isupper() else _building_function(builder),
                                    text, cls, attr, method)
    reads = ((_keeper_read(index, keeper, field, tied, default), weight)
             for field, weight in fields) if keeper else ()
    return next((ConfigEvidence(r, weight) for r, weight in reads if r is not None),
                ConfigEvidence(None, fields[0][1]))


def built_reader(index: ReaderIndex, text: str, cls: str | None, function: str, owner: str,
                 attr: str, family: Callable[[str], frozenset[str]],
                 keepers: dict[frozenset[str], tuple[str, str] | None],
                 read: str | None = None) -> Reader | None:
    """The keeper's read (followed to its consumer) of the config field that builder
    ``function`` of class ``cls`` (in ``text``) fills with ``owner.attr``, or None.

    With ``read`` (the builder's reading statement, ``w1_scale = self.x`` or ``w1_scale=self.x,``)
    the field is the keyword that hands the local on (``w1_scale=w1_scale``), else the keyword
    itself; without it, ``owner`` is a local the builder returns (``quant_config._w2``) and the
    field is the property of the config's type that reads the same chain (``return
    self._w2.bias``)."""
    builder = _method_text(text, cls, function.rsplit(".", 1)[-1])
    ret = _RETURNS.search(builder[:builder.find(":\n") + 1]) if builder else None
    if ret is None:
        return None
    kinds = family(ret.group(1))
    if read is not None:
        bound = re.match(r"\s*(\w+)\s*=(?!=)", read)
        if bound is None:
            return None
        local = bound.group(1)
        handed = re.search(rf"(?<![\w.])(\w+)[ \t]*=[ \t]*{local}[ \t]*[,)\n]", builder)
        fields = [handed.group(1) if handed else local]
    else:
        root, _, rest = owner.partition(".")
        if not rest or not re.search(rf"^[ \t]+return[ \t]+{re.escape(root)}[ \t]*$", builder,
                                     re.M):
            return None
        fields = index.accessors(kinds, f"self.{rest}", attr)
    if kinds not in keepers:
        keepers[kinds] = _keeper(index.files, kinds, family)
    keeper = keepers[kinds]
    if keeper is None:
        return None
    tied, default = serving_classes(index, _building_function(builder), text, cls)
    if read is not None and _under_backend_test(builder, read):
        default = default._replace(order=())  # the branch admits only some backends
    return next((r for f in fields
                 if (r := _keeper_read(index, keeper, f, tied, default)) is not None), None)


def _keeper_read(index: ReaderIndex, keeper: tuple[str, str], field: str,
                 tied: frozenset[str] | None, default: Construction) -> Reader | None:
    """The keeper's read of ``field`` followed to its consumer
    (:meth:`.readers.ReaderIndex.accessor_read`); when the classes the storing class binds
    itself never read the field through ``self``, the read in a function they hand the whole
    config to (:func:`.handed_reader.config_field_read`) before the accessor."""
    found = index.accessor_read(*keeper, field, tied, default)
    if found is not None and found.bound and tied:
        handed = config_field_read(index, frozenset().union(*map(index.family, tied)),
                                   keeper[1], field)
        if handed is not None:
            return handed
    return found


def _under_backend_test(builder: str, read: str) -> bool:
    """Whether the builder's reading statement ``read`` sits under an ``if``/``elif`` that
    tests a backend (``if self.mxfp4_backend in TRITON_BACKENDS:``): the field is filled only
    for the backends that branch admits, so the selector's overall order does not rank its
    consumers."""
    at = builder.find(read.strip())
    if at < 0:
        return False
    start = builder.rfind("\n", 0, at) + 1
    indent = at - start
    for line in reversed(builder[:start].splitlines()):
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith(("#", ")", "]", "}")):
            continue  # a comment, or the closing line of a bracketed condition
        own = len(line) - len(stripped)
        if own < indent:
            if re.match(r"(?:el)?if\b[^\n]*backend\b", stripped):
                return True
            if stripped.startswith("def "):
                return False
            indent = own
    return False


def _building_function(builder: str) -> str:
    """The free function that builds the config a builder returns: the one every ``return``
    calls (:func:`_returned_function`), or the one that binds the local every ``return`` hands
    back (``quant_config = make_fp8_moe_quant_config(...)`` ... ``return quant_config``)."""
    name = _returned_function(builder) or _fall_through_function(builder)
    if name and re.search(rf"^[ \t]+return[ \t]+{name}\(", builder, re.M):
        return name
    returned = set(re.findall(r"^[ \t]+return[ \t]+(\w+)[ \t]*$", builder, re.M))
    if len(returned) != 1:
        return ""
    (local,) = returned
    bound = re.search(rf"^[ \t]+{local}[ \t]*(?::[^=\n]*)?=[ \t]*([a-z_]\w*)\(", builder, re.M)
    return bound.group(1) if bound and not re.search(
        rf"^[ \t]*def[ \t]+{bound.group(1)}\(", builder, re.M) else ""


def _fall_through_function(builder: str) -> str:
    """The free function the builder's fall-through ``return`` calls (its last statement at
    the body's own indent, reached when none of its backend tests holds: ``if backend ==
    HUMMING: return get_humming_config(...)`` then ``return make_wna16_config(...)``), or ""."""
    first = re.search(r":[ \t]*\n(?:[ \t]*(?:#[^\n]*)?\n)*([ \t]+)\S", builder)
    if first is None:
        return ""
    last = [m.group(1) for m in re.finditer(rf"^{first.group(1)}return[ \t]+([a-z_]\w*)\(",
                                            builder, re.M)]
    if not last or re.search(rf"^[ \t]*def[ \t]+{last[-1]}\(", builder, re.M):
        return ""
    return last[-1]


def _returned_function(builder: str) -> str:
    """The free function every ``return`` of a builder calls (``return
    make_nvfp4_moe_quant_config(...)``: the builder of the config), or "" (several, a method,
    a constructor, or a function nested in the builder)."""
    called = {m.group(1) for m in re.finditer(r"^[ \t]+return[ \t]+([\w.]+)", builder, re.M)}
    if len(called) != 1:
        return ""
    (name,) = called
    if not re.fullmatch(r"[a-z_]\w*", name) or re.search(rf"^[ \t]*def[ \t]+{name}\(",
                                                         builder, re.M):
        return ""
    return name


def _method_text(text: str, cls: str | None, name: str) -> str:
    """The text of method ``name`` of class ``cls`` in a file's ``text`` ("" when not found)."""
    body = re.search(rf"^class[ \t]+{re.escape(cls)}\b", text, re.M) if cls else None
    return def_text(text[body.start():_next_class(text, body.end())], name) if body else ""


def _fields(sources: Iterable[tuple[str, str]],
            prefer: Callable[[str], bool]) -> list[tuple[str, str]]:
    """``(keyword, weight)`` of each ``name=value`` in each source whose value names a weight
    (followed through the locals of the paired function text)."""
    return [(name, weight) for source, body in sources for name, value in _keywords(source)
            for weight in [derives_from(value, body, name, prefer=prefer)] if weight]


def _keywords(source: str) -> Iterator[tuple[str, str]]:
    """``(name, value)`` of each keyword argument or assignment in ``source``; the value runs
    to the first comma, newline or closing bracket outside brackets it opens
    (``w1_scale=getattr(layer, "w13_scale", None)`` keeps its whole call)."""
    for k in _KEYWORD.finditer(source):
        end, depth, quote = k.start(2), 0, ""
        while end < len(source):
            c = source[end]
            if quote:
                quote = "" if c == quote else quote
            elif c in "\"'":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and c in ",\n":
                break
            end += 1
        yield k.group(1), " ".join(source[k.start(2):end].split())


def _returned_call(builder: str) -> str:
    """The text of the calls the builder returns (``return make_config(w1_scale=...)``): its
    keywords are the config's fields, before the builder's locals of the same names."""
    out = []
    for m in re.finditer(r"^[ \t]+return[ \t]+[\w.]+\(", builder, re.M):
        end, depth = m.end(), 1
        while end < len(builder) and depth:
            depth += {"(": 1, ")": -1}.get(builder[end], 0)
            end += 1
        out.append(builder[m.end():end - 1])
    return "\n".join(out)


def _wrapped_helper(index: ReaderIndex, builder: str) -> str:
    """The text of the function of another file that the builder wraps (every ``return`` of
    the builder calls it: ``return get_humming_moe_quant_config(layer, ...)``), or ""."""
    name = _returned_function(builder)
    if not name:
        return ""  # a method, a constructor or a nested function of the builder
    return tree_def_text(index, name, "")


def tree_def_text(index: ReaderIndex, name: str, indent: str = r"[ \t]*") -> str:
    """:func:`.def_text.def_text` of ``name`` in the first file of the tree that defines it at
    an indent matching ``indent`` (files in the index's order), or "". Memoized per index:
    one search of every file's text per name, where the builders of many findings name the
    same function (``make_fp8_moe_quant_config``)."""
    return index.memo(f"tree def {indent} {name}", lambda: next(
        (d for _, t in index.files if f"def {name}(" in t for d in [def_text(t, name, indent)]
         if d), ""))


def _constant(index: ReaderIndex, weight: str) -> bool:
    """An attribute read (``layer.swiglu_alpha``) whose attribute is neither a parameter nor
    computed after load."""
    return re.fullmatch(r"[\w.]*\.\w+", weight) is not None and not computed_weight(index, weight)


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
