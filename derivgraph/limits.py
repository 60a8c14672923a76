"""Resource bounds on untrusted specs: file size, YAML expansion, formula size and depth,
constant folding and tensor sizes.

Specs come from third-party packages, so every input that could make derivgraph hang or
allocate without bound is refused with a ``DG016 resource-limit`` error before the work starts.
The bounds live in one mutable :data:`LIMITS` object (``DERIVGRAPH_MAX_NUMEL`` sets the tensor
element bound from the environment). This module imports neither torch nor the rest of
derivgraph.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from derivgraph.errors import LimitError, Rule

__all__ = [
    "LIMITS",
    "LimitError",
    "Limits",
    "check_constant",
    "check_budget",
    "check_bytes",
    "check_constant_fold",
    "check_entry_count",
    "check_formula_text",
    "check_numel",
    "check_path",
    "fold_constant",
]

_RULE = Rule.RESOURCE_LIMIT


@dataclass
class Limits:
    """Every bound derivgraph enforces on spec input (change them on :data:`LIMITS`)."""

    max_file_bytes: int = 512 * 1024  # one spec file (the largest built-in one is 28 KB)
    max_yaml_nodes: int = 50_000  # YAML nodes after alias expansion
    max_yaml_depth: int = 64  # nested YAML flow collections, checked before parsing
    max_formula_chars: int = 4096
    max_nesting: int = 64  # brackets plus runs of unary operators, checked before ast.parse
    max_ast_depth: int = 100  # checked right after ast.parse, before any recursive walk
    max_path_parts: int = 64  # dotted segments of an owner / object / source path
    max_int_bits: int = 64  # integer constants and folded integers
    max_string_chars: int = 1024  # string constants and folded strings
    max_sequence_items: int = 65_536  # folded lists and tuples (a shape, a list of tensors)
    max_numel: int = int(os.environ.get("DERIVGRAPH_MAX_NUMEL", 1 << 32))  # one tensor
    # bytes, not elements: one tensor (intermediates too), what one spec file allocates for one
    # matched module, and everything derived for one model
    max_tensor_bytes: int = int(os.environ.get("DERIVGRAPH_MAX_TENSOR_BYTES", 2 << 30))
    max_file_alloc_bytes: int = int(os.environ.get("DERIVGRAPH_MAX_FILE_BYTES", 1 << 30))
    max_model_alloc_bytes: int = int(os.environ.get("DERIVGRAPH_MAX_MODEL_BYTES", 32 << 30))
    max_derived_per_file: int = 1024  # derived entries in one spec file (the library: 70)
    max_each_nesting: int = 2  # each() comprehensions nested in one formula


LIMITS = Limits()


_UNARY_RUN = re.compile(r"(?:[-+~]\s*){2,}")


def check_formula_text(text: str) -> None:
    """Length and nesting of a formula, checked on the text before ``ast.parse`` sees it."""
    if len(text) > LIMITS.max_formula_chars:
        raise LimitError(f"the formula is {len(text)} characters long (limit "
                         f"{LIMITS.max_formula_chars})",
                         "split it into several derived tensors or params")
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    longest_unary = max((len(m.group().replace(" ", "")) for m in _UNARY_RUN.finditer(text)),
                        default=0)
    if deepest + longest_unary > LIMITS.max_nesting:
        raise LimitError(f"the formula nests {deepest + longest_unary} levels deep (limit "
                         f"{LIMITS.max_nesting})", "flatten the expression")


def ast_depth(tree: Any, limit: int) -> int:
    """Depth of an ``ast`` tree (iterative, stops counting past ``limit``)."""
    import ast

    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def check_constant(value: Any) -> Any:
    """A literal or folded constant within bounds (ints, strings, sequences); returns it."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and value.bit_length() > LIMITS.max_int_bits:
        raise LimitError(f"the integer {_short(value)} needs {value.bit_length()} bits (limit "
                         f"{LIMITS.max_int_bits})", "use numbers that fit in 64 bits")
    if isinstance(value, str) and len(value) > LIMITS.max_string_chars:
        raise LimitError(f"a string of {len(value)} characters (limit "
                         f"{LIMITS.max_string_chars})", "use short strings (dtype names, "
                         "each() patterns)")
    if isinstance(value, (list, tuple)) and len(value) > LIMITS.max_sequence_items:
        raise LimitError(f"a list of {len(value)} items (limit {LIMITS.max_sequence_items})",
                         "use a tensor op instead of a long Python list")
    return value


def _short(value: int) -> str:
    return f"~2**{value.bit_length() - 1}" if value.bit_length() > 64 else str(value)


def _size(value: Any) -> int | None:
    """Length of a str/list/tuple, else None."""
    return len(value) if isinstance(value, (str, list, tuple)) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_constant_fold(op: str, args: Sequence[Any]) -> None:
    """Refuse folding ``op(*args)`` over Python constants when the result would be too big.

    Estimated from the operands alone, so ``2 ** 10 ** 10`` or ``'ab' * 10 ** 9`` are refused
    without being computed.
    """
    if len(args) != 2:
        return
    a, b = args
    if op == "pow" and _is_int(a) and _is_int(b) and b > 0 and abs(a) > 1:
        bits = (abs(a).bit_length() - 1) * b
        if bits > LIMITS.max_int_bits:
            raise LimitError(f"{_short(a)} ** {_short(b)} has about {bits} bits (limit "
                             f"{LIMITS.max_int_bits})", "use smaller constants")
    if op == "pow" and isinstance(b, (int, float)) and isinstance(a, (int, float)) \
            and abs(b) > 1 and abs(a) not in (0, 1):
        try:
            digits = abs(b) * math.log10(abs(a)) if a else 0.0
        except (OverflowError, ValueError):
            digits = math.inf
        if digits > 308 and not (_is_int(a) and _is_int(b)):
            raise LimitError(f"{a!r} ** {b!r} overflows a float", "use smaller constants")
    if op == "mul":
        for seq, n in ((a, b), (b, a)):
            size = _size(seq)
            if size is not None and _is_int(n):
                if size * max(n, 0) > max(LIMITS.max_string_chars, LIMITS.max_sequence_items):
                    raise LimitError(f"repeating a {type(seq).__name__} of {size} items "
                                     f"{_short(n)} times exceeds the limit",
                                     "use a tensor op (full, ones) instead of repetition")
        if _is_int(a) and _is_int(b) and a.bit_length() + b.bit_length() > \
                LIMITS.max_int_bits + 1:
            raise LimitError(f"{_short(a)} * {_short(b)} exceeds {LIMITS.max_int_bits} bits",
                             "use smaller constants")
    if op == "add":
        sa, sb = _size(a), _size(b)
        if sa is not None and sb is not None and sa + sb > max(LIMITS.max_string_chars,
                                                               LIMITS.max_sequence_items):
            raise LimitError(f"joining sequences of {sa} and {sb} items exceeds the limit",
                             "use shorter constants")


_PY_OPS: dict[str, Any] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "pow": lambda a, b: a ** b,
}


def fold_constant(op: str, a: Any, b: Any) -> Any:
    """``a op b`` over Python constants within bounds; :class:`LimitError` on overflow.

    Other errors (``ZeroDivisionError``, ``TypeError``) propagate: they are not resource
    problems and the caller reports them.
    """
    check_constant_fold(op, (a, b))
    try:
        result = _PY_OPS[op](a, b)
    except OverflowError as exc:
        raise LimitError(f"{a!r} {op} {b!r} overflows: {exc}", "use smaller constants") from None
    if isinstance(result, complex):
        raise TypeError(f"{a!r} {op} {b!r} is complex")
    return check_constant(result)


def check_numel(shape: Iterable[int], where: str) -> None:
    """Refuse a tensor shape with more than ``LIMITS.max_numel`` elements (before allocation)."""
    shape = [int(size) for size in shape]
    numel = 1
    for size in shape:
        numel *= int(size)
    if numel > LIMITS.max_numel:
        raise LimitError(f"{where}: a tensor of shape {list(shape)} has {numel} elements (limit "
                         f"{LIMITS.max_numel}; set DERIVGRAPH_MAX_NUMEL to raise it)",
                         "check the shape the formula builds")


def check_bytes(shape: Iterable[int], itemsize: int, where: str) -> int:
    """Refuse a tensor of more than ``LIMITS.max_tensor_bytes`` bytes; returns its bytes."""
    shape = [int(size) for size in shape]
    numel = 1
    for size in shape:
        numel *= max(size, 0)
    nbytes = numel * itemsize
    if nbytes > LIMITS.max_tensor_bytes:
        raise LimitError(f"{where}: a tensor of shape {shape} takes {_gib(nbytes)} (limit "
                         f"{_gib(LIMITS.max_tensor_bytes)} per tensor; set "
                         "DERIVGRAPH_MAX_TENSOR_BYTES to raise it)",
                         "check the shape the formula builds")
    return nbytes


def check_entry_count(count: int) -> None:
    """Refuse a spec file of more than ``LIMITS.max_derived_per_file`` derived entries."""
    if count > LIMITS.max_derived_per_file:
        raise LimitError(f"{count} derived entries in one spec file (limit "
                         f"{LIMITS.max_derived_per_file})", "split the specs over several "
                         "files, or gather with each() instead of listing entries")


def check_budget(total: int, limit: int, what: str, env: str) -> None:
    """Refuse ``total`` bytes allocated for ``what`` beyond ``limit``."""
    if total > limit:
        raise LimitError(f"{what} allocate {_gib(total)} in all (limit {_gib(limit)}; set {env} "
                         "to raise it)", "check the shapes the formulas build")


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.3g} GiB" if nbytes >= 1 << 30 else f"{nbytes / (1 << 20):.3g} MiB"


def check_path(path: str, what: str) -> None:
    """A dotted path no longer than ``LIMITS.max_path_parts`` segments."""
    parts = path.count(".") + 1 if path else 0
    if parts > LIMITS.max_path_parts:
        raise LimitError(f"{what} has {parts} segments (limit {LIMITS.max_path_parts})",
                         "use a shorter attribute path")
