"""What a stored expression is made of, read from its syntax: allocations, constructions,
containers, names of weights, and the tensor chains it reads.

Shared by the store and fold rules of the static audit (:mod:`.rules`, :mod:`.stores`,
:mod:`.folds`).
"""

from __future__ import annotations

import ast
import re

from derivgraph.audit.static.infer import attr_chain, call_name
from derivgraph.audit.static.vocab import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    looks_like_tensor_attr,
)
from derivgraph.audit.static.walk import walk

__all__ = [
    "ALLOCATIONS", "LOADED_NAMES", "WEIGHT_FREE_RE", "WEIGHT_WORDS", "calls_copy",
    "dtype_view_of", "is_allocation", "is_construction", "is_container", "refills",
    "shape_free_chains", "weight_named",
]

COPY_METHODS = frozenset({"to", "float", "half", "bfloat16", "double", "clone", "contiguous",
                          "type"})
"""Methods that copy a tensor into another dtype, device or layout."""
LOADED_NAMES = frozenset({"weight", "bias"})
"""Attribute names of loaded parameters."""
WEIGHT_WORDS = ("weight", "bias", "scale", "proj", "norm", "embed", "qkv", "w1", "w2", "w13",
                "sink")
"""Words in a name that can hold weight values."""
WEIGHT_FREE_RE = re.compile(
    r"(?:^|_)(?:cos|sin|rotary|rope|freqs|inv_freq|positions?|token_ids|"
    r"physical_to|global_to|logical_to|expert_ids|expert_map|ptrs?|"
    r"ranges|flags|indices|ids)(?:_|$)")
"""Names of values that never come from weights: rotary tables, routing maps, pointer tables."""


ALLOCATIONS = frozenset({"zeros", "empty", "ones", "full", "arange", "new_zeros", "new_empty",
                         "new_ones", "new_full", "zeros_like", "empty_like", "ones_like",
                         "full_like", "empty_strided", "tensor"})
"""Factory calls whose values come from no tensor argument."""


def weight_named(name: str) -> bool:
    """A name that can hold weight values: tensor-like (``w13_weight_scale``) or with a weight
    word in it, unless it names weight-free data (``cos_sin_cache``, ``expert_map``)."""
    weighty = any(w in name for w in WEIGHT_WORDS)
    if WEIGHT_FREE_RE.search(name) and not weighty:
        return False
    return weighty or looks_like_tensor_attr(name)


def is_construction(value: ast.expr) -> bool:
    """``torch.tensor(...)``/``torch.as_tensor(...)`` or an allocation: always new storage."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    return name in ALLOCATIONS or name == "as_tensor"


def is_allocation(value: ast.expr) -> bool:
    """A fresh allocation whose values do not come from any tensor argument."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    return name in ALLOCATIONS and name != "tensor" or (
        name == "tensor" and all(isinstance(a, ast.Constant) for a in value.args))


def shape_free_chains(node: ast.expr) -> set[str]:
    """Dotted names an expression reads as tensors (not only for .shape/.dtype/.size())."""
    skip: set[int] = set()
    for n in walk(node):
        if isinstance(n, ast.Attribute) and n.attr in NON_TENSOR_ATTRS:
            skip.update(id(m) for m in walk(n.value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in NON_TENSOR_METHODS):
            skip.update(id(m) for m in walk(n.func.value))
    return {c.removesuffix(".data") for n in walk(node) if id(n) not in skip
            and isinstance(n, (ast.Attribute, ast.Name)) and (c := attr_chain(n))}


def is_container(value: ast.expr) -> bool:
    return isinstance(value, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.DictComp))


def calls_copy(func: ast.AST) -> bool:
    """Whether a function refills something with ``.copy_(...)`` (keep-the-object pattern)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "copy_" for n in walk(func))


def refills(func: ast.AST, chain: str) -> bool:
    """Whether a function refills ``chain`` itself with ``<chain>.copy_(...)``."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "copy_" and attr_chain(n.func.value) == chain
               for n in walk(func))


def dtype_view_of(value: ast.expr, chain: str, imports: dict[str, str]) -> bool:
    """``<chain>[.data].view(torch.<dtype>)``: a reinterpretation that keeps the storage."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "view" and len(value.args) == 1 and not value.keywords):
        return False
    receiver = attr_chain(value.func.value)
    dtype = call_name(value.args[0], imports) or ""
    return receiver in (chain, f"{chain}.data") and dtype.startswith("torch.")
