"""The spec language: pydantic models for derived-tensor declarations.

A :class:`SpecFile` holds :class:`Spec` entries. Each spec names what it applies to in a live
model (:class:`Target`), optional config ``params`` frozen at compile time, and the
:class:`DerivedTensor` entries it declares. Specs are data: building one runs no code.

Example (YAML)::

    version: 1
    specs:
      - name: cutlass-fp8-strides
        target: {module_class: [FusedMoE], object: quant_method.moe_kernel.fused_experts,
                 object_class: [CutlassExpertsFp8Base]}
        params:
          E: w13_weight.shape[0]
          K: w2_weight.shape[1]
        derived:
          - {name: ab_strides1, owner: quant_method.moe_kernel.fused_experts,
             kind: attribute, formula: "full([E], K, dtype=int64)"}
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from derivgraph.errors import SourceLocation
from derivgraph.spec.kinds import TensorKind

__all__ = [
    "MAX_TOLERANCE", "MODULE_RESERVED", "DerivedTensor", "Spec", "SpecFile", "Target",
    "normalize_path", "split_type_name", "unsafe_name",
]

# One class name or a list of them (normalized to a list).
ClassNames = Annotated[
    list[str],
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]

# \Z, not $: "forward\n" must not pass as "forward"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Attribute names every torch.nn.Module has (methods, properties, its registries): a spec may
# never bind, own or read through them. Kept literal so that spec checks need no torch;
# tests/spec/test_hardening.py checks it covers dir(nn.Module()) of the installed torch.
MODULE_RESERVED = frozenset("""
T_destination _apply _backward_hooks _backward_pre_hooks _buffers _call_impl _compiled_call_impl
_forward_hooks _forward_hooks_always_called _forward_hooks_with_kwargs _forward_pre_hooks
_forward_pre_hooks_with_kwargs _get_backward_hooks _get_backward_pre_hooks _get_name
_is_full_backward_hook _load_from_state_dict _load_state_dict_post_hooks
_load_state_dict_pre_hooks _maybe_warn_non_full_backward_hook _modules _named_members
_non_persistent_buffers_set _parameters _register_load_state_dict_pre_hook
_register_state_dict_hook _replicate_for_data_parallel _save_to_state_dict _slow_forward
_state_dict_hooks _state_dict_pre_hooks _version _wrapped_call_impl add_module apply bfloat16
buffers call_super_init children compile cpu cuda double dump_patches eval extra_repr float
forward get_buffer get_extra_state get_parameter get_submodule half ipu load_state_dict modules
mtia named_buffers named_children named_modules named_parameters parameters
register_backward_hook register_buffer register_forward_hook register_forward_pre_hook
register_full_backward_hook register_full_backward_pre_hook register_load_state_dict_post_hook
register_load_state_dict_pre_hook register_module register_parameter
register_state_dict_post_hook register_state_dict_pre_hook requires_grad_ set_extra_state
set_submodule share_memory state_dict to to_empty train training type xpu zero_grad
""".split())


TYPE_NAME_SUFFIXES = (".__class__.__name__", ".__class__.__qualname__")


def split_type_name(path: str) -> tuple[str, str | None]:
    """``a.b.__class__.__name__`` -> (``a.b``, ``__name__``): the one dunder read a ``where``
    predicate may make (the class name of an attribute); other paths -> (path, None)."""
    for suffix in TYPE_NAME_SUFFIXES:
        if path.endswith(suffix):
            return path[: -len(suffix)], suffix.rsplit(".", 1)[1]
    return path, None


def unsafe_name(name: str) -> str | None:
    """Why ``name`` may not be bound or traversed (a dunder, an nn.Module member), else None."""
    if name.startswith("__") and name.endswith("__"):
        return f"{name!r} is a dunder (Python internals)"
    if name in MODULE_RESERVED:
        return f"{name!r} is reserved by torch.nn.Module"
    return None
_PATH = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(\.([A-Za-z_][A-Za-z0-9_]*|[0-9]+))*\Z")

#: The documented range of ``tolerance``: finite, 0 to this bound.
MAX_TOLERANCE = 1000.0


def normalize_path(path: str) -> str:
    """A path with each item index written canonically: ``layers.00`` -> ``layers.0``, so two
    spellings of one owner are one owner (and a duplicate, DG009)."""
    return ".".join(str(int(p)) if p.isdigit() else p for p in path.split(".")) if path else path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)
    # a shared default (SourceLocation is frozen): a default_factory costs a signature
    # inspection per element, which dominates loading a large file
    _location: SourceLocation = PrivateAttr(default=SourceLocation())

    @property
    def location(self) -> SourceLocation:
        """Where this element was declared (file and line for YAML, ``<python>`` otherwise)."""
        return self._location


def _check_path(value: str, what: str) -> str:
    if value and not _PATH.match(value):
        raise ValueError(
            f"{what} {value!r} is not an attribute path; write dotted attribute names such as "
            "'quant_method.moe_kernel.fused_experts' (numbers select list items: 'layers.0')"
        )
    return normalize_path(value)


class Target(_Strict):
    """What a spec applies to in a live model. Classes are matched by name, never imported."""

    module_class: ClassNames = Field(
        default_factory=list,
        description="Module classes (short or qualified names, any class in the MRO) to match.",
    )
    quant_method_class: ClassNames = Field(
        default_factory=list,
        description="Classes of the module's `quant_method` attribute to match (MRO, by name).",
    )
    object: str | None = Field(
        default=None,
        description="Attribute path from the module to an object that must exist for a match, "
        "e.g. 'quant_method.moe_kernel.fused_experts'. It may be rebuilt on every reload.",
    )
    object_class: ClassNames = Field(
        default_factory=list,
        description="Classes the object at `object` must have (MRO, by name).",
    )
    where: dict[str, Any] = Field(
        default_factory=dict,
        description="Predicates: attribute path from the module -> required value, a list of "
        "allowed values, or {not: value-or-list} for excluded values ({not: null}: set). "
        "Missing attributes do not match.",
    )

    @field_validator("module_class", "quant_method_class", "object_class", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("object")
    @classmethod
    def _object_path(cls, value: str | None) -> str | None:
        return _check_path(value, "target.object") if value else value

    @model_validator(mode="after")
    def _needs_a_class(self) -> Target:
        if not (self.module_class or self.quant_method_class):
            raise ValueError(
                "a target needs module_class or quant_method_class; name the layer class "
                "(e.g. module_class: [FusedMoE]) or the quant method (quant_method_class: "
                "[Fp8MoEMethod])"
            )
        if self.object_class and not self.object:
            raise ValueError("object_class needs object: give the attribute path to that object")
        return self


class DerivedTensor(_Strict):
    """One tensor (or Python scalar) derived from weights or config."""

    name: str = Field(description="Attribute name on the owner, e.g. 'g1_alphas'; for a tuple "
                      "owner, the item's index ('0').")
    owner: str = Field(
        default="",
        description="Attribute path from the matched module to the object holding the tensor; "
        "empty for the module itself.",
    )
    kind: TensorKind = Field(
        description="parameter | buffer (registered on a module owner), attribute (plain "
        "attribute, any owner), alias (the same object as `of`), view (a view of another "
        "tensor's storage, given by `formula`), scalar (a Python number: not refillable), fold "
        "(an in-place transform of the source weight `owner.name`, applied once per load), "
        "engine (a tensor only the engine's own code computes: adopted, refilled from the engine).",
    )
    formula: str | None = Field(
        default=None,
        description="Expression over sources, params and other derived tensors of this spec. "
        "Required except for alias.",
    )
    of: str | None = Field(
        default=None,
        description="For alias: a derived tensor of this spec, or a source path from the module.",
    )
    dtype: str | None = Field(
        default=None, description="Declared dtype (e.g. float32); must equal the inferred one."
    )
    shape: list[int | str] | None = Field(
        default=None,
        description="Declared shape; items are ints or param names. Must equal the inferred one.",
    )
    device: str | None = Field(
        default=None,
        description="'cpu', 'cuda', 'cuda:N', or a source path whose device to use. Default: "
        "the device of the formula's first source tensor, else of the module's first parameter.",
    )
    persistent: bool = Field(
        default=False, description="For buffers: include in state_dict (vLLM skips non-persistent)."
    )
    tolerance: float = Field(
        default=0.0,
        ge=0.0,
        le=MAX_TOLERANCE,
        allow_inf_nan=False,
        strict=True,
        description="Largest |engine - formula| accepted when adopting the engine's tensor: "
        f"a finite number from 0 to {MAX_TOLERANCE:g}.",
    )
    replace: bool = Field(
        default=False,
        description="Allow binding over an attribute the owner already holds as None (a tensor "
        "is adopted, never replaced). Callables and other values are never replaced.",
    )
    description: str = Field(default="", description="What the tensor is and who reads it.")
    config: dict[str, str] = Field(
        default_factory=dict,
        description="For fold: name -> attribute path of a config number the formula reads, "
        "looked up on the matched module, then on each enclosing module up to the root.",
    )

    @field_validator("name")
    @classmethod
    def _name_is_ident(cls, value: str) -> str:
        if not _IDENT.match(value) and not re.fullmatch(r"[0-9]+", value):
            raise ValueError(f"name {value!r} must be a Python identifier (the attribute name), "
                             "or an item index of a tuple owner")
        return normalize_path(value)

    @field_validator("owner")
    @classmethod
    def _owner_path(cls, value: str) -> str:
        return _check_path(value, "owner")

    @model_validator(mode="after")
    def _kind_rules(self) -> DerivedTensor:
        if self.kind == TensorKind.ALIAS:
            if not self.of:
                raise ValueError(
                    "kind 'alias' needs `of`: the tensor this one is the same object as"
                )
            if self.formula:
                raise ValueError("an alias has no formula; drop `formula` or use kind 'view'")
        else:
            if self.of:
                raise ValueError(f"`of` is only for kind 'alias', not '{self.kind}'")
            if not self.formula and self.kind != TensorKind.ENGINE:  # engine: formula optional
                raise ValueError(f"kind '{self.kind}' needs a formula")
        if self.config and self.kind != TensorKind.FOLD:
            raise ValueError("`config` is only for kind 'fold'")
        if self.persistent and self.kind != TensorKind.BUFFER:
            raise ValueError("`persistent` only applies to kind 'buffer'")
        return self


class Spec(_Strict):
    """A set of derived tensors declared for one kind of module, quant method or kernel."""

    name: str = Field(description="Unique spec name, e.g. 'cutlass-fp8-moe-strides'.")
    description: str = Field(default="", description="What the spec covers and why.")
    references: list[str] = Field(
        default_factory=list, description="Issues or code that motivate the spec (vllm#41670)."
    )
    target: Target = Field(description="Where in a live model the spec applies.")
    params: dict[str, str] = Field(
        default_factory=dict,
        description="Config values frozen at compile time: name -> expression over module "
        "attributes (e.g. 'w13_weight.shape[0]', 'moe_config.hidden_dim').",
    )
    derived: list[DerivedTensor] = Field(description="The tensors this spec declares.")

    @model_validator(mode="after")
    def _param_names(self) -> Spec:
        # duplicate derived names are DG009, checked by derivgraph.spec.check.check_specs
        for p in self.params:
            if not _IDENT.match(p):
                raise ValueError(f"param name {p!r} must be a Python identifier")
        return self


class SpecFile(_Strict):
    """The top-level YAML document."""

    version: Literal[1] = Field(default=1, description="Spec language version.")
    specs: list[Spec] = Field(description="The specs in this file.")

    @field_validator("version", mode="before")
    @classmethod
    def _exactly_one(cls, value: Any) -> Any:
        if type(value) is not int:  # true, 1.0 and "1" compare equal to 1 but are not versions
            raise ValueError(f"version must be the integer 1, not {value!r}")
        return value
