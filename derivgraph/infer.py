"""Shape, dtype and device inference on ``meta`` tensors, and declared-vs-inferred checks.

Every op runs on meta tensors, so a spec's shapes and dtypes are checked without touching
real data.
"""

from __future__ import annotations

from typing import Any

import torch

from .dag import DerivedGraph, DerivedNode, substitute
from .engine_values import engine_meta, is_engine
from .errors import Rule
from .ops import DTYPES, OPS

__all__ = ["infer_shapes", "meta_value"]


def meta_value(graph: DerivedGraph, node_id: str, cache: dict[str, Any]) -> Any:
    """The node's value on the meta device (shapes and dtypes only)."""
    if node_id in cache:
        return cache[node_id]
    data = graph.g.nodes[node_id]
    if data["kind"] == "source":
        value = torch.empty_strided(data["shape"], data["stride"], dtype=data["dtype"],
                                    device="meta")
    elif data["kind"] == "derived":
        node = graph.derived[node_id]
        value = meta_value(graph, node.input, cache) if node.input else None
        if node.input is None and is_engine(node.decl):  # engine hook: the engine's layout
            value = engine_meta(graph.model, node_id)
    else:
        op = OPS[data["op"]]
        args = substitute(data["args"], lambda r: meta_value(graph, r, cache))
        kwargs = substitute(data["kwargs"], lambda r: meta_value(graph, r, cache))
        if "device" in kwargs:
            kwargs["device"] = "meta"
        fn = op.infer or op.fn
        value = fn(*args, **kwargs)
    cache[node_id] = value
    return value


def infer_shapes(graph: DerivedGraph) -> None:
    cache: dict[str, Any] = {}
    for node_id in graph.ordered():
        if node_id not in graph.derived:
            continue
        node = graph.derived[node_id]
        if node.input is None:
            continue
        try:
            value = meta_value(graph, node_id, cache)
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:
            first = str(exc).strip().split("\n")[0]
            graph.issue(Rule.INFERENCE, f"formula {node.decl.formula or node.decl.of!r} fails on "
                        f"shapes/dtypes: {first}",
                        "check the shapes and dtypes the formula combines", node)
            continue
        if not isinstance(value, torch.Tensor):
            graph.issue(Rule.INFERENCE, f"formula gives a {type(value).__name__}, not a tensor",
                        "make the formula produce a tensor", node)
            continue
        node.meta = value
        _check_declared(graph, node, value)


def _check_declared(graph: DerivedGraph, node: DerivedNode, value: torch.Tensor) -> None:
    decl = node.decl
    params = node.params
    if decl.dtype is not None:
        want = DTYPES.get(decl.dtype)
        if want is None:
            graph.issue(Rule.SCHEMA, f"unknown dtype {decl.dtype!r}",
                        f"use one of {', '.join(sorted(DTYPES))}", node)
        elif want != value.dtype:
            graph.issue(Rule.MISMATCH, f"declared dtype {decl.dtype} but the formula gives "
                        f"{str(value.dtype).removeprefix('torch.')}",
                        f"wrap the formula in cast(..., {decl.dtype}) or fix `dtype`", node)
    if decl.shape is not None:
        want_shape = [params.get(s, s) if isinstance(s, str) else s for s in decl.shape]
        if list(value.shape) != want_shape:
            graph.issue(Rule.MISMATCH, f"declared shape {decl.shape} = {want_shape} but the "
                        f"formula gives {list(value.shape)}",
                        "fix `shape`, or reshape in the formula (copies never broadcast)", node)
    if decl.kind == "scalar" and value.numel() != 1:
        graph.issue(Rule.MISMATCH, f"a scalar needs one element, the formula gives "
                    f"{list(value.shape)}", "reduce the formula, e.g. amax(x)", node)
    if decl.kind == "alias" and graph.g.nodes.get(node.input, {}).get("kind") == "source":
        src_device = graph.g.nodes[node.input]["device"]
        node.device = src_device
    src_devices = {graph.g.nodes[a]["device"] for a in graph.source_deps()[node.id]}
    if decl.device and src_devices and node.device not in src_devices and decl.kind != "alias":
        graph.issue(Rule.MISMATCH, f"declared device {node.device} but the sources are on "
                    f"{', '.join(sorted(map(str, src_devices)))}",
                    "drop `device` or point it at the right tensor", node)
    elif not decl.device and src_devices:
        node.device = sorted(src_devices, key=str)[0]
