"""What an engine's reload does to each kind of store: the static audit's severity model.

A site of the static audit (:class:`.sites.RawSite`) stores derived state somewhere: a
layer parameter, a non-persistent buffer, a plain attribute on a quant method, a Python float...
:func:`classify` names that place (a :class:`Store`); an engine's rule table (:data:`VLLM_0_33`)
says whether a reload keeps it right, and so the finding's :class:`Severity`:

* ``error``: will be stale, or moved under a captured graph, after a reload;
* ``warning``: likely so (it depends on what holds the reference or whether the code reruns);
* ``info``: the engine handles it (vLLM's layerwise copy-back refills registered parameters and
  persistent buffers of a layer in their startup storage); listed for the kernel-format path,
  where no post-load code runs and a spec is what recomputes it.

vLLM 0.33.0 (``model_executor/model_loader/reload/layerwise.py``): ``initialize_layerwise_reload``
keeps every registered parameter and buffer object of every layer; after the quant method's
post-load step ran on temporaries, ``_copy_and_restore_kernel_tensors`` copies each temporary into
the kept object and re-registers the kept objects, whatever ``replace_parameter``, ``.data =`` or
``register_parameter`` did. Non-persistent buffers are copied only when loaded; plain attributes,
objects rebuilt by post-load code (experts, kernels, quant configs), references they hold, Python
scalars, containers, closures and lazily built caches are not touched. What a value is refines
the store (:func:`refine`): a view or reference of kept storage, a weight-free value, a
placeholder, code that runs once (the model-level initial-load hook, or the constructor of an
object built only outside post-load code) keep their values or addresses. Attention layers run their
post-load step on the live kept tensors, so what it replaces there is replaced for good.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from derivgraph._enum import StrEnum
from derivgraph.audit.static.loaders import loader_rebind
from derivgraph.audit.static.scope import MODULE_CLASS_NAMES, is_rebuilt_lineage
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.spec.kinds import TensorKind

__all__ = ["ENGINES", "VLLM_0_33", "Engine", "OwnerRole", "Semantics", "Severity", "Store",
           "classify", "owner_role", "refine", "runs_on_kept", "semantics_of"]


class Engine(enum.Enum):
    """An inference engine whose reload semantics the audit knows."""

    VLLM_0_33 = "vllm-0.33"


class Severity(enum.Enum):
    """How sure the audit is that a site goes wrong on a reload."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for error, 1 for warning, 2 for info (the text report's sort key)."""
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Store(StrEnum):
    """Where a site keeps its derived state."""

    LAYER_PARAMETER = "layer-parameter"  # a registered Parameter or persistent buffer of a layer
    NON_PERSISTENT_BUFFER = "non-persistent-buffer"
    LIVE_ATTENTION_TENSOR = "live-attention-tensor"  # replaced on an attention layer
    LAYER_ATTRIBUTE = "layer-attribute"  # a plain tensor attribute of a module
    OBJECT_ATTRIBUTE = "object-attribute"  # on a quant method, experts, kernel, config, impl
    REFERENCE = "reference"  # another holder's tensor kept by reference
    HOST_SCALAR = "host-scalar"
    LAZY_CACHE = "lazy-cache"
    CONTAINER = "container"
    CAPTURED = "captured"
    STORAGE_SWAP = "storage-swap"
    IN_PLACE_FOLD = "in-place-fold"
    PLACEHOLDER = "placeholder"  # a 0-element tensor: nothing to keep fresh
    VIEW_OF_KEPT = "view-of-kept"  # a view of a read tensor: shares the storage that is refilled
    NOT_FROM_WEIGHTS = "not-from-weights"  # reads no weight: a weight reload cannot change it
    INITIAL_LOAD_COPY = "initial-load-copy"  # derived from weights by the initial-load-only hook
    INITIAL_LOAD_KEPT = "initial-load-kept"  # made once at initial load, weight-free or shared
    BUILT_AT_CONSTRUCTION = "built-at-construction"  # weight-free, by an object built once
    LOADER_REBIND = "loader-rebind"  # a weight loader binds a new Parameter on every load
    REFILLED_COPY = "refilled-copy"  # a copy refilled with copy_ only by post-load code
    LOADER_BYPASS = "loader-bypass"  # a registered parameter loaded around its weight_loader
    MODEL_LOAD_COPY = "model-load-copy"  # derived from a loaded module's tensors, once
    MODEL_LOAD_KEPT = "model-load-kept"  # made once when a model loads, holding no weights
    SKIPPED_PARAMETER = "skipped-parameter"  # a layer parameter the reload's skip set keeps live


class OwnerRole(enum.Enum):
    """What the receiver of a store is, judged from the code that writes it."""

    MODULE = "module"
    ATTENTION_MODULE = "attention-module"
    OBJECT = "object"  # quant method, experts, kernel, quant config, attention impl...
    LOCAL = "local"  # an argument or local the code was handed


@dataclass(frozen=True)
class Semantics:
    """What a reload does to one store: whether it survives, the severity, and the fix."""

    store: Store
    survives: bool
    severity: Severity
    consequence: str
    fix: str


def _row(store: Store, survives: bool, severity: Severity, consequence: str,
         fix: str) -> tuple[Store, Semantics]:
    return store, Semantics(store, survives, severity, consequence, fix)


VLLM_0_33: Mapping[Store, Semantics] = dict([
    _row(Store.LAYER_PARAMETER, True, Severity.INFO,
         "kept: the layerwise copy-back refills the startup Parameter/buffer in place; only a "
         "kernel-format reload (no post-load code) leaves it as loaded",
         "nothing for layerwise reloads; declare a spec if you reload in kernel format"),
    _row(Store.NON_PERSISTENT_BUFFER, False, Severity.ERROR,
         "stale: the copy-back skips non-persistent buffers that were not loaded, so it keeps "
         "the first weights' values",
         "register it as a persistent buffer, or declare it in a spec (kind: buffer)"),
    _row(Store.LIVE_ATTENTION_TENSOR, False, Severity.ERROR,
         "moved: attention post-load code runs on the live kept tensors, so this replaces the "
         "object a captured graph reads and frees the old storage",
         "keep the object and `copy_` into it, or declare it in a spec"),
    _row(Store.LAYER_ATTRIBUTE, False, Severity.ERROR,
         "moved and stale: a plain attribute is not refilled; every reload allocates a new "
         "tensor while captured graphs keep reading the old one",
         "register it as a persistent buffer, keep the object and `copy_` into it, or declare "
         "it in a spec"),
    _row(Store.OBJECT_ATTRIBUTE, False, Severity.ERROR,
         "moved and stale: attributes of quant methods, experts, kernels and configs are outside "
         "the copy-back; a reload allocates a new tensor while captured graphs read the old one",
         "declare it in a spec (owner: the object path), or keep the object and `copy_` into it"),
    _row(Store.REFERENCE, False, Severity.WARNING,
         "stale: the holder keeps the tensor that existed when the code ran (a reload temporary "
         "in a layerwise reload), not the kept object the copy-back refills",
         "read the tensor through its owner at use time, or declare it in a spec (kind: alias)"),
    _row(Store.HOST_SCALAR, False, Severity.ERROR,
         "stale under graphs: a Python number is baked into kernels and captured graphs; no "
         "in-place refill can change it",
         "keep it as a device tensor read by the kernel, or declare it (kind: scalar) so a change "
         "is reported and the graph recaptured"),
    _row(Store.LAZY_CACHE, False, Severity.ERROR,
         "stale: built from the weights on first use and never rebuilt, so it keeps the first "
         "weights' values after every reload",
         "rebuild it in process_weights_after_loading into kept storage, or declare it in a spec"),
    _row(Store.CONTAINER, False, Severity.ERROR,
         "moved and stale: tensors in lists, dicts or dataclasses are invisible to the copy-back; "
         "post-load code fills the container with new tensors",
         "keep the tensors as registered buffers and `copy_` into them, or declare each in a spec"),
    _row(Store.CAPTURED, False, Severity.ERROR,
         "moved and stale: a tensor inside a partial or closure is hidden from every walk; a "
         "reload rebuilds the callable around a new tensor",
         "pass the tensor at call time from its owner, or declare it in a spec"),
    _row(Store.STORAGE_SWAP, False, Severity.WARNING,
         "moved: `.set_()` points the tensor at other storage; the next load writes through one "
         "view while the other goes stale",
         "keep one storage and `copy_` into it, or declare the fused tensor in a spec"),
    _row(Store.IN_PLACE_FOLD, False, Severity.WARNING,
         "non-idempotent fold: a rerun applies it twice, and a guard flag skips it after a real "
         "reload",
         "declare the fold in a spec (kind: fold) so it is applied once per load"),
    _row(Store.PLACEHOLDER, True, Severity.INFO,
         "harmless: a 0-element placeholder holds no values to keep fresh",
         "nothing"),
    _row(Store.VIEW_OF_KEPT, True, Severity.INFO,
         "a view into a kept tensor, made where the code reads the kept tensor itself (once, or "
         "by an attention step on the live tensors): the reload refills that storage in place, "
         "so every reader of the view sees the new weights",
         "nothing for layerwise reloads; read it through its owner if the base can be rebound"),
    _row(Store.NOT_FROM_WEIGHTS, True, Severity.INFO,
         "reads no weight (a routing map, rotary cache, pointer table...): a weight reload does "
         "not change its values",
         "nothing, unless it does read weights: then declare it in a spec"),
    _row(Store.INITIAL_LOAD_COPY, False, Severity.ERROR,
         "stale: made from the weights by the model-level process_weights_after_loading(), which "
         "vLLM 0.33 runs at initial load only; no reload rebuilds it (nor moves it)",
         "move it into a layer's or quant method's post-load step, or declare it in a spec"),
    _row(Store.LOADER_BYPASS, False, Severity.ERROR,
         "stale: a layerwise reload_weights wraps only the parameter's weight_loader; this "
         "loader copies into `.data` directly, which is the meta placeholder during the reload, "
         "so the layer counts no loaded elements and finalize_layerwise_processing puts the old "
         "tensor back ('Failed to load weights')",
         "load it through its weight_loader (set_weight_attrs with a weight_loader, or "
         "default_weight_loader(param, w)), or declare it in a spec"),
    _row(Store.MODEL_LOAD_COPY, False, Severity.ERROR,
         "stale: computed once from the tensors of a module when the object loads its model "
         "(load_model/load_draft_model) or stages a copy of a parameter's .data (a CPU-offload "
         "host copy); no reload reruns that step, so a weight update that "
         "refills the source in place leaves this copy with the first values",
         "read the source tensor where it is used, recompute it in a post-load step of the "
         "module that owns the source, or declare it in a spec"),
    _row(Store.MODEL_LOAD_KEPT, True, Severity.INFO,
         "made once when the object loads its model (load_model/load_draft_model) or stages "
         "a parameter's .data, never rerun by a reload, as a workspace, a scalar, a reference "
         "or a value computed from no module tensor: nothing a weight update changes",
         "nothing"),
    _row(Store.INITIAL_LOAD_KEPT, True, Severity.INFO,
         "made once at initial load (model-level hook, never rerun) as a workspace, a weight-free "
         "value or a view/reference of a kept tensor the copy-back refills: stays right",
         "nothing"),
    _row(Store.BUILT_AT_CONSTRUCTION, True, Severity.INFO,
         "made once by an object built outside post-load code (the tree builds its class only "
         "in construction or set-up code no reload reruns), as a workspace or weight-free "
         "table: it keeps its storage and holds no weight values",
         "nothing, unless post-load code rebuilds the object: then declare it in a spec"),
    _row(Store.LOADER_REBIND, False, Severity.WARNING,
         "moved: the weight loader binds a new Parameter (or rebinds `.data`) on every load; "
         "the layerwise copy-back keeps only the objects it recorded, so a captured graph keeps "
         "reading the old storage when the new object lands after it",
         "copy the checkpoint tensor into the kept Parameter (`param.data.copy_(w)` or its "
         "weight_loader), registering it once"),
    _row(Store.REFILLED_COPY, False, Severity.WARNING,
         "stale after a kernel-format reload: the post-load step made this copy once and "
         "refills it with `copy_` when it reruns (right for a layerwise reload), but a "
         "kernel-format reload runs no post-load code and refills only the tensor it copies",
         "read the source tensor where the copy is used (or refresh the copy there), or declare "
         "it in a spec"),
    _row(Store.SKIPPED_PARAMETER, False, Severity.ERROR,
         "moved: the reload's skip set (SKIP_TENSORS in model_loader/reload/meta.py) keeps this "
         "parameter live, never moved to meta nor copied back; the reload loads it in place, "
         "then this rebinds its storage, so a captured graph keeps reading the old storage",
         "copy the new value into the parameter (`param.data.copy_(new)` when the shape "
         "allows), or declare it in a spec"),
])
"""vLLM 0.33.0's layerwise reload (``reload/layerwise.py``), store by store."""

ENGINES: Mapping[Engine, Mapping[Store, Semantics]] = {Engine.VLLM_0_33: VLLM_0_33}

_MODULE_RECEIVERS = frozenset({"layer", "module", "m", "mod", "model"})
_OBJECT_SEGMENTS = ("quant_method", "moe_kernel", "fused_experts", "experts", "impl", "kernel",
                    "runner", "quant_config", "moe_quant_config", "prepare_finalize", "_w1",
                    "_w2", "_a1", "_a2")
_ATTENTION_CODE = ("KVCache", "Attention", "MLA")


def _is_object_segment(name: str) -> bool:
    return name in _OBJECT_SEGMENTS or name.endswith(("_config", "_kernel", "_method", "_impl"))


def _is_module(lineage: set[str]) -> bool:
    return bool(lineage & MODULE_CLASS_NAMES)


def _is_attention(lineage: set[str]) -> bool:
    return any(token in name for name in lineage for token in _ATTENTION_CODE)


def owner_role(site: RawSite) -> OwnerRole:
    """What the receiver of the store is: a module (attention or not), an object or a local."""
    if site.owner == "<local>":
        return OwnerRole.LOCAL
    root, *rest = site.owner.split(".")
    lineage = set(site.lineage) or ({site.cls} if site.cls else set())
    if any(_is_object_segment(p) for p in rest):
        return OwnerRole.OBJECT
    if root in ("self", "cls"):
        if _is_module(lineage):
            if rest:
                return OwnerRole.MODULE  # a submodule: self.model, self.norm
            return OwnerRole.ATTENTION_MODULE if _is_attention(lineage) else OwnerRole.MODULE
        return OwnerRole.OBJECT
    if root in _MODULE_RECEIVERS or not _is_object_segment(root):
        if not rest and _is_attention(lineage) and not is_rebuilt_lineage(frozenset(lineage)):
            return OwnerRole.ATTENTION_MODULE  # a KV-cache or attention method on its layer
        return OwnerRole.MODULE
    return OwnerRole.OBJECT


_STORE_OF_CATEGORY = {
    CategoryId.HOST_SCALAR: Store.HOST_SCALAR,
    CategoryId.CAPTURED_TENSOR: Store.CAPTURED,
    CategoryId.LAZY_CACHE: Store.LAZY_CACHE,
    CategoryId.CONTAINER: Store.CONTAINER,
    CategoryId.SET_STORAGE: Store.STORAGE_SWAP,
    CategoryId.FOLD: Store.IN_PLACE_FOLD,
    CategoryId.ALIAS: Store.REFERENCE,
    CategoryId.LOADER_BYPASS: Store.LOADER_BYPASS,
}
"""Categories whose store does not depend on the receiver."""


def classify(site: RawSite) -> Store:
    """The store a site writes (its category and its receiver decide)."""
    role = owner_role(site)
    cat = site.category
    if site.empty:
        return Store.PLACEHOLDER
    if cat in _STORE_OF_CATEGORY:
        return _STORE_OF_CATEGORY[cat]
    if cat is CategoryId.REGISTER:
        if role is OwnerRole.ATTENTION_MODULE:
            return Store.LIVE_ATTENTION_TENSOR
        if site.kind is TensorKind.BUFFER and not site.persistent:
            return Store.NON_PERSISTENT_BUFFER
        return Store.LAYER_PARAMETER
    if cat is CategoryId.REPLACE_LAYOUT or cat is CategoryId.DATA_REBIND:
        if role is OwnerRole.OBJECT:
            return Store.OBJECT_ATTRIBUTE
        return Store.LAYER_PARAMETER
    # tensor-attr
    if role is OwnerRole.OBJECT:
        return Store.OBJECT_ATTRIBUTE
    if site.kind is TensorKind.PARAMETER:
        if role is OwnerRole.ATTENTION_MODULE:
            return Store.LIVE_ATTENTION_TENSOR
        return Store.LAYER_PARAMETER  # nn.Module.__setattr__ registers it: the copy-back keeps it
    return Store.LAYER_ATTRIBUTE


_SHARED_OR_WEIGHT_FREE = frozenset({Store.LAYER_ATTRIBUTE, Store.OBJECT_ATTRIBUTE,
                                    Store.REFERENCE, Store.CONTAINER, Store.NON_PERSISTENT_BUFFER,
                                    Store.LIVE_ATTENTION_TENSOR})
"""Stores whose severity depends on whether the value has storage and weights of its own."""
_NO_VALUES = frozenset({Store.HOST_SCALAR, Store.PLACEHOLDER, Store.CAPTURED})
"""Stores a model-loading root keeps without tensor values of its own to go stale (a host
scalar is judged apart: not a tensor)."""


def runs_on_kept(site: RawSite) -> bool:
    """Whether the storing step reads the kept tensors themselves on a reload: attention code
    (its post-load step runs on the live tensors), not a layer's or a rebuilt object's step,
    which vLLM runs on the reload's temporaries before copying them back."""
    lineage = frozenset(site.lineage) or frozenset({site.cls} - {None})
    return _is_attention(set(lineage)) and not is_rebuilt_lineage(lineage)


def refine(site: RawSite, store: Store) -> Store:
    """The store once what the value is (a view, weight-free, an allocation) and whether the code
    reruns on a reload are known."""
    if site.model_load_only:  # the weight-derivation filter of model-loading roots
        return Store.MODEL_LOAD_COPY if site.load_derived and store not in _NO_VALUES \
            else Store.MODEL_LOAD_KEPT
    if loader_rebind(site.function, site.category, site.expr, site.allocation, site.empty):
        return Store.LOADER_REBIND
    if store is Store.LAYER_PARAMETER and site.reload_skipped and not site.initial_load_only:
        return Store.SKIPPED_PARAMETER  # rebound after the reload loaded it: nothing refills it
    if store is Store.STORAGE_SWAP and site.initial_load_only:
        # swapped once, before any graph capture: the kept Parameter now views the fused
        # storage, and every reload's copy-back writes through it into that storage
        return Store.INITIAL_LOAD_KEPT
    if store is Store.LAZY_CACHE and site.view_of_kept:
        return Store.VIEW_OF_KEPT  # views of kept storage, made once: refilled in place
    if store not in _SHARED_OR_WEIGHT_FREE:
        return store
    shares = site.view_of_kept or store is Store.REFERENCE
    if site.built_once:  # a reference made once points at the kept tensor, refilled in place
        return Store.VIEW_OF_KEPT if shares else Store.BUILT_AT_CONSTRUCTION
    if site.initial_load_only:
        # built once: nothing moves; only a copy of the weights can go stale
        if shares or site.allocation or site.weight_free:
            return Store.INITIAL_LOAD_KEPT
        return Store.INITIAL_LOAD_COPY
    if site.refilled and store in (Store.LAYER_ATTRIBUTE, Store.OBJECT_ATTRIBUTE):
        return Store.REFILLED_COPY
    if site.view_of_kept and store in (Store.LAYER_ATTRIBUTE, Store.OBJECT_ATTRIBUTE):
        # a view has the storage of its base: an attention step runs on the live kept tensors
        # (refilled in place); any other rerunning step runs on the reload's temporaries, so
        # the view aliases a temporary, exactly as a reference to it would
        return Store.VIEW_OF_KEPT if runs_on_kept(site) else Store.REFERENCE
    if site.view_of_kept and site.category is CategoryId.REGISTER:
        return Store.VIEW_OF_KEPT  # a buffer over the storage of a tensor the layer keeps
    if (store in (Store.LAYER_ATTRIBUTE, Store.OBJECT_ATTRIBUTE) and site.weight_free
            and not site.constructed):
        return Store.NOT_FROM_WEIGHTS  # a construction rerun per reload still moves: kept as is
    if store is Store.REFERENCE and site.weight_free:
        return Store.NOT_FROM_WEIGHTS  # a reference to a rotary cache: no storage of its own
    return store


def semantics_of(site: RawSite, engine: Engine = Engine.VLLM_0_33) -> Semantics:
    """The engine's rule for the store a site writes."""
    return ENGINES[engine][refine(site, classify(site))]
