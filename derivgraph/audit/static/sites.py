"""What the static audit reports: the rule categories and one site before spec matching."""

from __future__ import annotations

from dataclasses import dataclass

from derivgraph._enum import StrEnum
from derivgraph.spec.kinds import TensorKind

__all__ = ["CATEGORIES", "Category", "CategoryId", "Handed", "RawSite"]


class CategoryId(StrEnum):
    """The static audit's rule categories (a closed set; the value is the report's id)."""

    TENSOR_ATTR = "tensor-attr"
    ALIAS = "alias"
    REGISTER = "register"
    REPLACE_LAYOUT = "replace-layout"
    DATA_REBIND = "data-rebind"
    SET_STORAGE = "set-storage"
    HOST_SCALAR = "host-scalar"
    CAPTURED_TENSOR = "captured-tensor"
    LAZY_CACHE = "lazy-cache"
    CONTAINER = "container"
    FOLD = "fold"
    DYNAMIC_NAME = "dynamic-name"
    LOADER_BYPASS = "loader-bypass"



@dataclass(frozen=True)
class Category:
    """A rule of the static audit: a stable id, a title and why such a site is risky."""

    id: CategoryId
    rule_id: str
    title: str
    risk: str


CATEGORIES: dict[str, Category] = {c.id: c for c in (
    Category(CategoryId.TENSOR_ATTR, "DGS001", "fresh tensor stored on an object",
             "post-load code stores a newly allocated tensor on an object; every reload allocates "
             "it again at a new address, so captured CUDA graphs and kernels keep reading the old, "
             "stale or freed storage"),
    Category(CategoryId.ALIAS, "DGS002", "reference to another tensor stored on an object",
             "post-load code stores a reference to a tensor it does not own; when a layerwise "
             "reload restores the kept parameters (or the owner is rebuilt), this holder keeps "
             "pointing at the reload temporary or the freed old tensor"),
    Category(CategoryId.REGISTER, "DGS003", "buffer or parameter registered after loading",
             "register_buffer/register_parameter in post-load code replaces the registered "
             "object on every rerun instead of refilling it, so its address changes under "
             "captured graphs"),
    Category(CategoryId.REPLACE_LAYOUT, "DGS004", "replace_parameter with a layout change",
             "in vLLM 0.33 replace_parameter copies in place only when shape, stride, dtype and "
             "device all match; a transposed, permuted, padded, shuffled, reshaped or cast value "
             "rebinds `.data`, so the parameter's data_ptr changes on every reload"),
    Category(CategoryId.DATA_REBIND, "DGS005", "`.data` rebound",
             "assigning `.data` keeps the Parameter object but moves it to new storage; captured "
             "graphs keep the old address"),
    Category(CategoryId.SET_STORAGE, "DGS006", "`.set_()` storage swap",
             "`.set_()` points a tensor at other storage; a later direct reload writes through the "
             "old view (or the new one) and the other copy goes stale"),
    Category(CategoryId.HOST_SCALAR, "DGS007", "Python scalar read from a tensor",
             "a Python number taken from a tensor (`.item()`, `float(t)`, `.tolist()`) is baked "
             "into kernels and captured graphs; no in-place refill can update it, so a reload "
             "with new weights needs a graph recapture"),
    Category(CategoryId.CAPTURED_TENSOR, "DGS008", "tensor captured in a partial or closure",
             "a tensor captured by functools.partial, a lambda or a nested function is hidden "
             "from every parameter/buffer walk; reloads rebuild the callable around a new tensor "
             "while captured graphs read the old one"),
    Category(CategoryId.LAZY_CACHE, "DGS009", "cache built lazily from weights",
             "a tensor built from weights on first use behind `if self._x is None:` is never "
             "rebuilt by a reload: it keeps the values of the first weights (and a captured graph "
             "keeps its address)"),
    Category(CategoryId.CONTAINER, "DGS010", "tensors stored in a container",
             "tensors kept in a list, dict or dataclass are invisible to the parameter/buffer "
             "walk and to vLLM's copy-back; post-load code fills the container with new tensors "
             "on every run"),
    Category(CategoryId.FOLD, "DGS011", "non-idempotent fold into a loaded parameter",
             "an in-place write whose value depends on the parameter itself (`p.mul_(c)`, "
             "`p *= c`, `p.copy_(f(p))`) folds a transform into a loaded weight: a rerun without "
             "a fresh load applies it twice, and a guard flag skips it after a real reload"),
    Category(CategoryId.DYNAMIC_NAME, "DGS012", "site with a computed attribute name",
             "the attribute name is computed at run time (`setattr(layer, name, ...)`), so no "
             "spec can name it; review the site and declare each concrete name it takes"),
    Category(CategoryId.LOADER_BYPASS, "DGS013",
             "registered parameter loaded around its weight_loader",
             "the model's loader fills a registered parameter by `.data.copy_` instead of its "
             "weight_loader; a layerwise reload wraps only weight_loader, so the copy lands in the "
             "meta placeholder and the old tensor is put back: the weight stays stale"),
)}


@dataclass(frozen=True)
class RawSite:
    """One statement that stores derived state, before matching against specs."""

    line: int
    col: int
    cls: str | None
    function: str
    attr: str
    owner: str  # the receiver as written: "self", "layer", "self.moe_quant_config._w1"
    category: CategoryId
    reason: str
    expr: str  # the stored value as written (shortened)
    kind: TensorKind  # guessed spec kind
    via: tuple[str, ...]
    classes: tuple[str, ...]  # class names (with ancestors) used to match spec targets
    formula: str | None = None
    alias_of: str | None = None
    lineage: tuple[str, ...] = ()  # the class holding the code and its ancestors (short names)
    persistent: bool = True  # register_buffer(..., persistent=False) sets False
    empty: bool = False  # a 0-element placeholder (torch.empty(0)): nothing to keep fresh
    view_of_kept: bool = False  # a view of a tensor the code read (no storage of its own)
    weight_free: bool = False  # reads only weight-free data (rotary cache, routing map...)
    allocation: bool = False  # zeros/empty/full...: a workspace, no values to keep fresh
    constructed: bool = False  # torch.tensor(...) or an allocation: new storage every run
    initial_load_only: bool = False  # reached only from the model-level initial-load hook
    from_weights: bool = True  # the value reads an attribute named like a weight
    model_load_only: bool = False  # reached only from a model-loading method (.scope)
    load_derived: bool = False  # the value computes from a module's tensors (.load_roots)
    built_once: bool = False  # in the constructor of a class built only at model construction
    refilled: bool = False  # made once, then refilled with copy_ by the post-load step itself
    derives: str | None = None  # the weight a caller's handed value derives from (.handoff)
    forwards: str | None = None  # a candidate forwarding store: the receiver it reads (.forwarded)
    reload_skipped: bool = False  # a parameter the reload's skip set never refills (.reload_skips)
    rule_round: int = 0  # the issue-21 round whose rule raised this site (0: before round 28)

    def __post_init__(self) -> None:
        # the vocabularies are closed: a category or kind given by its word is taken as its member,
        # an unknown one refused here (ValueError), not compared as a string later
        if type(self.category) is not CategoryId:
            object.__setattr__(self, "category", CategoryId(self.category))
        if type(self.kind) is not TensorKind:
            object.__setattr__(self, "kind", TensorKind(self.kind))


@dataclass(frozen=True)
class Handed:
    """A parameter a caller binds to a new tensor derived from a weight."""

    key: int | str  # position after ``self``/``cls``, or the keyword
    value: str  # the caller's argument, as written (shortened)
    caller: str  # the caller's qualified name
    line: int
    weight: str  # the weight it derives from (``mlp.down_proj.weight``)
    file: str = ""  # the caller's file (filled in when the handoff is resolved)
    origin: str = ""  # where a handed-on parameter came from (a factory's caller)

    @property
    def why(self) -> str:
        here = f"`{self.value}` handed in by {self.caller} ({self.file}:{self.line})"
        return f"{here}, from {self.origin}" if self.origin else here
