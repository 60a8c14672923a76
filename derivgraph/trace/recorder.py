"""Record every aten op a post-load step runs, with the tensors that flow between them.

:class:`Recorder` is a ``TorchDispatchMode``: inside it, each op call becomes a :class:`Node`
whose tensor arguments are :class:`Ref` s to the node that produced them at that moment (or
``None`` for a tensor made outside the recording: a checkpoint parameter, a loaded value).
In-place ops make a new node for the mutated tensor, so a later reader sees the new producer.
Every tensor seen is kept alive until the recorder is dropped, so object ids stay unique.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["Node", "Recorder", "Ref", "is_creation", "is_inplace", "is_overwrite"]

#: Ops whose result depends only on shapes and literals, never on another tensor's values.
_CREATION = frozenset({
    "full", "zeros", "ones", "empty", "empty_strided", "arange", "scalar_tensor", "lift_fresh",
    "lift_fresh_copy", "ones_like", "zeros_like", "empty_like", "full_like", "new_full",
    "new_zeros", "new_ones", "new_empty", "eye", "linspace",
})


#: In-place ops that overwrite every element of their target: its old value is not read.
_OVERWRITE = frozenset({"fill_", "zero_", "copy_"})


def _op_name(func: Any) -> str:
    return func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)


def is_creation(func: Any) -> bool:
    """An op whose output values read no tensor's values (shape-only or literal)."""
    return _op_name(func) in _CREATION


def is_overwrite(func: Any) -> bool:
    """An in-place op that overwrites every element of its target (``fill_``, ``copy_``)."""
    return _op_name(func) in _OVERWRITE


def is_inplace(func: Any) -> bool:
    """An op that writes into its first argument (``mul_``, ``copy_``, ``fill_``...)."""
    schema = getattr(func, "_schema", None)
    if schema is None or not schema.arguments:
        return False
    alias = schema.arguments[0].alias_info
    return bool(alias and alias.is_write)


@dataclass(eq=False)
class Node:
    """One op call: ``func(*args, **kwargs)``; tensors in args/kwargs are :class:`Ref` s."""

    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outputs: list[Any] = field(default_factory=list)
    weighty: bool = False  # its value depends on some tensor's values (not just shapes)

    @property
    def name(self) -> str:
        return _op_name(self.func)

    @property
    def overload(self) -> str:
        return str(self.func)


@dataclass(frozen=True, eq=False)
class Ref:
    """A tensor as an op saw it: the object, its producer then, and which output it was."""

    tensor: torch.Tensor
    producer: Node | None
    index: int = 0


class Recorder(TorchDispatchMode):
    """Record ops; ``producer_of(t)`` is the last node that wrote ``t``."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[Node] = []
        self.scalars: list[tuple[Any, Ref]] = []  # (.item() value, the tensor it came from)
        self._producer: dict[int, tuple[Node, int]] = {}
        self._by_address: dict[tuple[Any, ...], tuple[Node, int]] = {}
        self._keep: list[Any] = []
        self._weighty_storage: set[int] = set()
        self.view_writes: set[int] = set()  # storages written through a view in place
        self.written_in_place: set[int] = set()  # ids of tensors an in-place op wrote

    # ---- lookups ---------------------------------------------------------------------------
    def producer_of(self, t: torch.Tensor) -> tuple[Node, int] | None:
        """The last node that wrote ``t``; for a new object over a recorded result's memory
        (``nn.Parameter(x)``, ``x.data``), the node that wrote that memory."""
        hit = self._producer.get(id(t))
        if hit is None and t.device.type != "meta":
            hit = self._by_address.get(_address(t))
        return hit

    def ref(self, t: torch.Tensor) -> Ref:
        hit = self.producer_of(t)
        return Ref(t, hit[0], hit[1]) if hit else Ref(t, None)

    def _storage(self, t: torch.Tensor) -> int:
        try:
            return t.untyped_storage().data_ptr() if t.device.type != "meta" else 0
        except (RuntimeError, NotImplementedError):
            return 0

    def is_weighty(self, ref: Ref) -> bool:
        """Whether ``ref``'s value can depend on a tensor's values (a leaf always can)."""
        if ref.producer is None:
            return True
        return ref.producer.weighty or self._storage(ref.tensor) in self._weighty_storage

    # ---- recording -------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        refs_args = tree_map(lambda a: self.ref(a) if isinstance(a, torch.Tensor) else a, args)
        refs_kwargs = tree_map(lambda a: self.ref(a) if isinstance(a, torch.Tensor) else a,
                               kwargs)
        node = Node(func, refs_args, refs_kwargs)
        inputs = [r for r in tree_flatten((refs_args, refs_kwargs))[0] if isinstance(r, Ref)]
        read = inputs[1:] if is_overwrite(func) and inputs else inputs
        # an op with no tensor input that is not a creation op (rand, randn, a loader's
        # read) makes data the recording cannot explain: weighty
        node.weighty = not is_creation(func) and (
            not inputs or any(self.is_weighty(r) for r in read))
        self.nodes.append(node)
        self._keep.append((args, kwargs, out))
        if _op_name(func) == "_local_scalar_dense":
            self.scalars.append((out, inputs[0]))
            return out
        if is_inplace(func) and args and isinstance(args[0], torch.Tensor):
            target = args[0]
            self.written_in_place.add(id(target))
            if node.weighty:
                self._weighty_storage.add(self._storage(target))
            base = self._producer.get(id(target))
            if base is not None and base[0].name in _VIEW_NAMES:
                self.view_writes.add(self._storage(target))
            self._producer[id(target)] = (node, 0)
            self._remember(target, node, 0)
            node.outputs = [target]
            return out
        flat, _ = tree_flatten(out)
        for i, t in enumerate(flat):
            if isinstance(t, torch.Tensor):
                self._producer[id(t)] = (node, i)
                self._remember(t, node, i)
                node.outputs.append(t)
        return out

    def _remember(self, t: torch.Tensor, node: Node, index: int) -> None:
        if t.device.type == "meta":
            return
        if node.name in _VIEW_NAMES:  # a Parameter over a view (vLLM's W_UV) finds it; a
            self._by_address.setdefault(_address(t), (node, index))  # write keeps priority
        else:
            self._by_address[_address(t)] = (node, index)


def _address(t: torch.Tensor) -> tuple[Any, ...]:
    try:
        ptr = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return (id(t),)
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


_VIEW_NAMES = frozenset({"slice", "select", "view", "_unsafe_view", "reshape", "t", "transpose",
                         "permute", "squeeze", "unsqueeze", "expand", "as_strided", "narrow",
                         "diagonal", "alias", "detach", "split", "split_with_sizes",
                         "unbind", "chunk"})
