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
        params: {E: w13_weight.shape[0], K: w2_weight.shape[1]}
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

from .errors import SourceLocation

__all__ = ["DerivedTensor", "Kind", "Spec", "SpecFile", "Target"]

Kind = Literal["parameter", "buffer", "attribute", "alias", "view", "scalar",
               "fold", "engine"]  # fold hook / engine hook: the last two kinds

# One class name or a list of them (normalized to a list).
ClassNames = Annotated[
    list[str],
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|\d+)(\.([A-Za-z_][A-Za-z0-9_]*|\d+))*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)
    _location: SourceLocation = PrivateAttr(default_factory=SourceLocation)

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
    return value


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

    name: str = Field(description="Attribute name on the owner, e.g. 'g1_alphas'.")
    owner: str = Field(
        default="",
        description="Attribute path from the matched module to the object holding the tensor; "
        "empty for the module itself.",
    )
    kind: Kind = Field(
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
        description="Largest |engine - formula| accepted when adopting the engine's tensor.",
    )
    description: str = Field(default="", description="What the tensor is and who reads it.")
    config: dict[str, str] = Field(  # fold hook
        default_factory=dict,
        description="For fold: name -> attribute path of a config number the formula reads, "
        "looked up on the matched module, then on each enclosing module up to the root.",
    )

    @field_validator("name")
    @classmethod
    def _name_is_ident(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"name {value!r} must be a Python identifier (the attribute name)")
        return value

    @field_validator("owner")
    @classmethod
    def _owner_path(cls, value: str) -> str:
        return _check_path(value, "owner")

    @model_validator(mode="after")
    def _kind_rules(self) -> DerivedTensor:
        if self.kind == "alias":
            if not self.of:
                raise ValueError(
                    "kind 'alias' needs `of`: the tensor this one is the same object as"
                )
            if self.formula:
                raise ValueError("an alias has no formula; drop `formula` or use kind 'view'")
        else:
            if self.of:
                raise ValueError(f"`of` is only for kind 'alias', not {self.kind!r}")
            if not self.formula and self.kind != "engine":  # engine hook: formula optional
                raise ValueError(f"kind {self.kind!r} needs a formula")
        if self.config and self.kind != "fold":  # fold hook
            raise ValueError("`config` is only for kind 'fold'")
        if self.persistent and self.kind != "buffer":
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
    def _unique_names(self) -> Spec:
        seen: set[tuple[str, str]] = set()
        for d in self.derived:
            key = (d.owner, d.name)
            if key in seen:
                raise ValueError(
                    f"derived tensor {d.owner + '.' if d.owner else ''}{d.name} is declared twice "
                    "in this spec; keep one declaration (use kind 'alias' for a second holder)"
                )
            seen.add(key)
        for p in self.params:
            if not _IDENT.match(p):
                raise ValueError(f"param name {p!r} must be a Python identifier")
        return self


class SpecFile(_Strict):
    """The top-level YAML document."""

    version: Literal[1] = Field(default=1, description="Spec language version.")
    specs: list[Spec] = Field(description="The specs in this file.")
