"""Container builders that can hold no tensor: a stored config with nothing a reload refills.

A post-load step that stores ``self.moe_quant_config = self.get_fused_moe_quant_config(layer)``
keeps a container the audit judges as holding tensors. When the builder reads none of its
arguments (not the layer), calls nothing of ``torch`` and reads only ``self`` attributes the
file never binds to a tensor expression, the container holds dtypes and Python scalars only
(``FusedMoEQuantDesc(dtype=self.codec)``): no reload leaves it stale and none moves storage a
captured path reads through it. :func:`tensor_free_builder` tells that case.
"""

from __future__ import annotations

import ast
import re
import textwrap

from derivgraph.audit.static.walk import walk

__all__ = ["tensor_free_builder"]

_SELF_CALL = re.compile(r"^self\.(\w+)\(")
_TENSORISH = re.compile(r"\b(?:torch|layer|Parameter|weight|scale|bias|tensor)\b|\.data\b", re.I)


def tensor_free_builder(expr: str, builder_text: str, file_text: str) -> str | None:
    """The builder's name when ``expr`` (the stored value, ``self.build(layer)``) calls a method
    whose text ``builder_text`` reads no argument, no ``torch`` and only ``self`` attributes
    the file (``file_text``) binds to non-tensor values; else None."""
    m = _SELF_CALL.match(expr.strip())
    if m is None or not builder_text:
        return None
    try:
        func = ast.parse(textwrap.dedent(builder_text)).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
    if func.args.vararg or func.args.kwarg or not params:
        return None
    others = set(params[1:])
    read: set[str] = set()
    for node in (n for stmt in func.body for n in walk(stmt)):
        if isinstance(node, ast.Name) and node.id in (others | {"torch"}):
            return None
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == params[0]):
            read.add(node.attr)
    for attr in read:
        binds = re.findall(rf"^[ \t]*self\.{re.escape(attr)}\b[^=\n]*=(?!=)([^\n]*)", file_text,
                           re.M)
        if not binds or any(_TENSORISH.search(b) for b in binds):
            return None
    return m.group(1)
