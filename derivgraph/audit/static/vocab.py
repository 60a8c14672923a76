"""The static audit's vocabulary: which names, methods and annotations mean "a tensor".

Kept apart from the inference logic (:mod:`.infer`) so the lists are easy to read and
extend: torch functions that return tensors, tensor-only ("strong") and tensor-or-not ("weak")
methods, methods that leave the tensor world (``.item()``, ``.shape``), operations that change a
tensor's layout, the attribute-name pattern of tensors, and type annotations.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

__all__ = [
    "LAYOUT_HELPER_RE", "LAYOUT_METHODS", "LAYOUT_TORCH", "NON_TENSOR_ATTRS",
    "NON_TENSOR_METHODS", "PARAMETER_NAMES", "SCALAR_BUILTINS", "SCALAR_METHODS",
    "STRONG_METHODS", "TORCH_TENSOR_FUNCS", "TORCH_TENSOR_NAMESPACES", "WEAK_METHODS",
    "Returned", "ReturnsTensor", "annotation_is_tensor", "annotation_shape",
    "looks_like_tensor_attr",
]

TORCH_TENSOR_FUNCS = frozenset("""
tensor as_tensor asarray from_numpy frombuffer empty empty_like empty_strided zeros zeros_like
ones ones_like full full_like arange range linspace logspace eye rand rand_like randn randn_like
randint randint_like randperm cat concat concatenate stack hstack vstack dstack column_stack
chunk split tensor_split unbind narrow narrow_copy select index_select gather scatter masked_select
take take_along_dim where transpose swapaxes swapdims permute t reshape flatten unflatten squeeze
unsqueeze movedim moveaxis flip fliplr roll rot90 repeat_interleave tile broadcast_to clone abs
neg negative exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sign clamp clip max min
amax amin aminmax maximum minimum fmax fmin sum nansum mean nanmean prod cumsum cumprod std var
norm argsort sort topk kthvalue argmax argmin matmul mm bmm addmm baddbmm einsum outer dot div
true_divide floor_divide mul multiply add sub subtract pow square round floor ceil trunc frac
sigmoid softmax log_softmax tanh relu diag diagonal diag_embed tril triu block_diag kron
cartesian_prod nonzero unique unique_consecutive bucketize searchsorted bincount histc
quantize_per_tensor quantize_per_channel dequantize view_as_real view_as_complex complex polar
real imag lerp addcmul addcdiv logical_not logical_and logical_or bitwise_and bitwise_or
bitwise_not bitwise_xor bitwise_left_shift bitwise_right_shift isnan isinf isfinite eq ne lt le
gt ge atleast_1d atleast_2d atleast_3d cross cdist tensordot inverse pinverse
""".split())
TORCH_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.ops.", "torch.fft.", "torch.linalg.",
                           "torch.special.")
PARAMETER_NAMES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter",
                             "torch.Tensor", "torch.nn.Buffer"})

STRONG_METHODS = frozenset("""
contiguous t reciprocal transpose permute unsqueeze squeeze view view_as reshape_as expand
expand_as new_full new_zeros new_ones new_empty new_tensor float half bfloat16 double cuda
flatten unflatten narrow repeat_interleave rsqrt amax amin clamp clamp_min clamp_max
to_dense pin_memory masked_fill index_select movedim softmax sigmoid type_as as_strided argsort
cumsum int long short byte char bool_ swapaxes transpose_ abs_ contiguous_ mT
""".split())
WEAK_METHODS = frozenset("""
to clone cpu repeat max min sum mean split chunk sort flip roll type mul add div sub pow matmul
exp log sign round neg reshape abs sqrt unbind gather index masked_select cat norm prod std var
float8 view_dtype argmax argmin topk nonzero tile expand_dims all any logical_not data
""".split())
NON_TENSOR_METHODS = frozenset("""
item tolist numel size dim stride data_ptr element_size is_contiguous storage_offset nelement
equal allclose is_floating_point get_device untyped_storage numpy __len__ is_pinned
""".split())
NON_TENSOR_ATTRS = frozenset("""
shape dtype device ndim is_cuda requires_grad nbytes itemsize is_meta is_sparse layout names
grad_fn is_leaf
""".split())
SCALAR_METHODS = frozenset({"item", "tolist"})
SCALAR_BUILTINS = frozenset({"float", "int", "bool"})
LAYOUT_METHODS = frozenset("""
t transpose permute view reshape flatten unflatten squeeze unsqueeze expand narrow movedim
swapaxes repeat repeat_interleave to float half bfloat16 double int long view_as T mT max amax
min amin sum mean as_strided new_zeros new_empty new_full new_ones new_tensor
""".split())
"""Tensor methods whose result may differ from the input in shape, stride or dtype."""
LAYOUT_TORCH = frozenset("""
transpose permute t reshape flatten unflatten squeeze unsqueeze movedim swapaxes cat concat
stack narrow repeat_interleave tile max amax min amin sum mean zeros empty full ones tensor
as_tensor empty_strided
""".split())
"""torch functions whose result may differ in layout from any tensor it replaces (explicit
shapes, reductions, concatenations, transposes)."""
LAYOUT_HELPER_RE = re.compile(
    r"shuffle|swizzle|(?:^|_)pad|permute|transpose|reorder|interleave|(?:^|_)re?pack|marlin|"
    r"layout|(?:^|_)convert|(?:^|_)quantize|(?:^|_)requant|blocked|reshape|repeat"
)

_TENSOR_ATTR = re.compile(
    r"(?:^|_)(?:weights?|qweight|bias|scales?|scale_2|scale_inv|inv_scale|gscale|alphas|betas|"
    r"zps?|qzeros|zeros|g_idx|perm|sinks|strides\d*|cos_sin_cache|inv_freq|global_scale|scale_c|"
    r"packed|weight_packed|zero_point)\d*$|^W_[A-Za-z0-9_]+$|weight_scale|input_scale"
)
_NOT_TENSOR_ATTR = re.compile(
    r"size|dtype|shape|(?:^|_)num_|(?:^|_)is_|(?:^|_)use_|(?:^|_)has_|config|strategy|name|"
    r"type$|block_|_dim$|(?:^|_)dims?$|(?:^|_)n$|group|rank|mode|layout|kind|backend|_fn$|"
    r"(?:^|_)func$|tp_|offset$|_len$|count$|(?:^|_)k$|_bits|_float$|_int$"
)


def looks_like_tensor_attr(name: str) -> bool:
    """True for attribute names that conventionally hold tensors (``w13_weight_scale``)."""
    return bool(_TENSOR_ATTR.search(name)) and not _NOT_TENSOR_ATTR.search(name)



Returned = bool | tuple[bool, ...]
"""What a call returns: a tensor (True), not one (False), or a tuple with tensor elements."""
ReturnsTensor = Callable[[ast.Call], Returned]

_TENSOR_TYPES = re.compile(r"^(?:Tensor|\w*Parameter|Buffer)$")
_UNION_TYPES = frozenset({"Optional", "Union"})
_SEQUENCE_TYPES = frozenset({"list", "List", "Sequence", "Iterable", "Iterator"})
_TUPLE_TYPES = frozenset({"tuple", "Tuple"})


def annotation_shape(node: ast.expr | None) -> Returned:
    """Tensor-ness of a type annotation: ``torch.Tensor | None`` -> True,
    ``tuple[torch.Tensor, int]`` -> (True, False), ``Callable[..., Tensor]`` -> False."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_shape(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = node.id if isinstance(node, ast.Name) else node.attr
        return bool(_TENSOR_TYPES.match(name))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return bool(annotation_shape(node.left)) or bool(annotation_shape(node.right))
    if isinstance(node, ast.Subscript):
        outer = node.value.id if isinstance(node.value, ast.Name) else (
            node.value.attr if isinstance(node.value, ast.Attribute) else "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer in _UNION_TYPES or outer in _SEQUENCE_TYPES:
            return any(bool(annotation_shape(a)) for a in args)
        if outer in _TUPLE_TYPES:
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                return bool(annotation_shape(args[0]))
            return tuple(bool(annotation_shape(a)) for a in args)
    return False


def annotation_is_tensor(node: ast.expr | None) -> bool:
    """Whether an annotation says tensor, or a union, sequence or tuple holding one."""
    shape = annotation_shape(node)
    return any(shape) if isinstance(shape, tuple) else shape




_MAPPING_TYPES = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})


def annotation_holds_tensors(node: ast.expr | None) -> bool:
    """Whether an annotation is a container of tensors: ``dict[str, torch.Tensor]`` or
    ``list[torch.Tensor]`` (not a bare tensor)."""
    if not isinstance(node, ast.Subscript):
        return False
    outer = node.value.id if isinstance(node.value, ast.Name) else (
        node.value.attr if isinstance(node.value, ast.Attribute) else "")
    args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if outer in _MAPPING_TYPES and len(args) == 2:
        return annotation_is_tensor(args[1])
    return outer in _SEQUENCE_TYPES and annotation_is_tensor(node)
