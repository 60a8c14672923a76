"""Match static-audit sites against the spec library, and draft a spec for the rest.

A site is **declared** when some spec declares a derived tensor whose ``name`` is the site's
attribute (for an item of a tuple, ``name: "0"``, the tuple's attribute: the last segment of its
``owner``) and whose target names one of the site's classes:

* the target's ``module_class``, ``quant_method_class`` and ``object_class`` entries are compared
  by short name (``vllm.x.Fp8MoEMethod`` -> ``Fp8MoEMethod``) with the class that holds the
  post-load code, its ancestors, and the classes of the roots that reached it (a module-level
  helper called from ``Fp8MoEMethod.process_weights_after_loading`` counts as Fp8MoEMethod's);
* a target class that *inherits* from the site's class also matches (a spec for
  ``CutlassExpertsFp8`` declares what ``CutlassExpertsFp8Base.__init__`` stores);
* code outside any class (a free ``load_weights``) matches on the name when the last segment of
  the derived tensor's ``owner`` equals the last segment of the receiver (``layer.x`` matches an
  empty owner);
* **through the object graph**, whatever class the assigning code sits in, for specs that target
  a layer class (``module_class``, no ``quant_method_class`` to narrow it): a store onto the layer
  (``layer.x`` in a quant method, a kernel or a helper) matches a derived tensor of that name
  whose owner is the module itself (empty ``owner``), so host scalars a spec declares on the
  Attention layer match the KV-cache method that writes them; a store onto ``self`` of a quant
  method, experts object, kernel, quant config or attention impl matches a derived tensor whose
  ``owner`` path ends in that object (``quant_method``, ``...fused_experts``, ``...moe_kernel``,
  ``...moe_quant_config``, ``impl``).

A ``set-storage`` site whose code then stores the fused tensor (``w.set_(fused[:n]);
self._fused = fused``) also matches a spec declaring that fused tensor (``_fused``): the spec of
the fusion covers the swap.

A ``fold`` site only matches a derived entry of kind ``fold`` (read from the raw kind value so
specs written before the schema knows it still load), and a fold entry only matches a fold site,
by class (not through the object graph: ``weight`` is too common a name). ``declared_folds``
adds ``(class, parameter name)`` pairs declared outside the spec library (the class is any class
of the site's lineage or roots, short name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from derivgraph.audit.static.scope import MODULE_CLASS_NAMES
from derivgraph.audit.static.semantics import OwnerRole, owner_role
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.errors import FormulaError
from derivgraph.spec.expr import parse_formula
from derivgraph.spec.kinds import TensorKind
from derivgraph.spec.model import Spec

__all__ = ["SpecIndex", "suggest_spec"]

_MODULE_RECEIVERS = frozenset({"layer", "module", "m", "mod", "model"})
# The last segment of a derived tensor's owner path -> a token the site's class lineage must hold.
_OBJECT_OWNERS = {"quant_method": "Method", "fused_experts": "Experts", "experts": "Experts",
                  "fallback_experts": "Experts", "moe_kernel": "Kernel", "kernel": "Kernel",
                  "moe_quant_config": "QuantConfig", "impl": "Impl"}


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class SpecIndex:
    """Derived-tensor names of a spec library, with the classes their targets name."""

    def __init__(self, specs: Sequence[Spec],
                 ancestors: Mapping[str, frozenset[str]] | None = None,
                 declared_folds: Iterable[tuple[str, str]] = ()) -> None:
        self.ancestors = ancestors or {}
        self.declared_folds = {(_short(c), a) for c, a in declared_folds}
        self.by_name: dict[str, list[tuple[str, str, frozenset[str], bool, bool]]] = {}
        for spec in specs:
            t = spec.target
            classes = frozenset(_short(c) for c in
                                [*t.module_class, *t.quant_method_class, *t.object_class])
            on_layer = bool(t.module_class) and not t.quant_method_class
            for d in spec.derived:
                # a member, or its word where a spec was built without validation
                fold = d.kind == TensorKind.FOLD
                name, owner = d.name, d.owner
                if name.isdigit() and owner:  # an item of a tuple: the site stores the tuple
                    owner, _, name = owner.rpartition(".")
                self.by_name.setdefault(name, []).append(
                    (spec.name, owner, classes, fold, on_layer))

    def match(self, site: RawSite) -> str | None:
        """The name of the first spec that declares the site, or None."""
        site_classes = set(site.classes)
        is_fold = site.category is CategoryId.FOLD
        if is_fold and any((c, site.attr) in self.declared_folds for c in site.classes):
            return "declared fold"
        role = owner_role(site)
        entries = list(self.by_name.get(site.attr, ()))
        if site.category is CategoryId.SET_STORAGE and site.alias_of:
            # `.set_()` into a fused tensor the code then stores: the spec of the fused tensor
            entries += self.by_name.get(site.alias_of.rsplit(".", 1)[-1], ())
        for spec_name, owner, classes, fold, on_layer in entries:
            if fold != is_fold:
                continue
            if classes & site_classes:
                return spec_name
            if site.cls and any(site.cls in self.ancestors.get(c, ()) for c in classes):
                return spec_name
            if not site_classes and _owner_matches(owner, site.owner):
                return spec_name
            if on_layer and not is_fold and _through_object_graph(owner, site, role):
                return spec_name
        return None


def _through_object_graph(owner: str, site: RawSite, role: OwnerRole) -> bool:
    """Whether the site's receiver is the object the derived tensor's owner path names."""
    root, _, rest = site.owner.partition(".")
    if role in (OwnerRole.MODULE, OwnerRole.ATTENTION_MODULE):
        # layer.x written by a quant method, kernel or helper: the layer itself.
        return not owner and root in _MODULE_RECEIVERS and not rest
    if role is OwnerRole.OBJECT and root in ("self", "cls") and not rest and owner:
        token = _OBJECT_OWNERS.get(_short(owner))
        return token is not None and any(token in c for c in (site.lineage or site.classes))
    return False


def _owner_matches(owner: str, receiver: str) -> bool:
    if not owner:
        return "." not in receiver
    return _short(owner) == _short(receiver)


# ---- suggestions --------------------------------------------------------------------------------

def _kebab(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name)
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _context_class(site: RawSite) -> str | None:
    """The class holding the code, else the class of the root that reached it."""
    if site.cls:
        return site.cls
    root = site.via[0] if site.via else ""
    return root.split(".")[0] if "." in root else None


def _role(site: RawSite) -> tuple[dict[str, object], str, str]:
    """(target mapping, owner of `self`, a note) guessed from the class that holds the code."""
    cls = _context_class(site)
    lineage = set(site.classes)
    if cls is None:
        return {"module_class": ["Module"]}, "", \
            "free function: narrow module_class to the layer class it runs on"
    names = " ".join(sorted(lineage))
    if lineage & MODULE_CLASS_NAMES:
        return {"module_class": [cls]}, "", "the module itself"
    if "Experts" in names:
        path = "quant_method.moe_kernel.fused_experts"
        return ({"module_class": ["FusedMoE"], "object": path, "object_class": [cls]}, path,
                "experts object, rebuilt by the quant method's post-load step; check the path "
                "(FallbackExperts wrappers add .experts / .fallback_experts)")
    if "QuantConfig" in names or "QuantDesc" in names:
        path = "quant_method.moe_quant_config"
        return ({"module_class": ["FusedMoE"], "object": path, "object_class": [cls]}, path,
                "quant config object; check the path")
    if "PrepareAndFinalize" in names or "Prepared" in names:
        path = "quant_method.moe_kernel.prepare_finalize"
        return ({"module_class": ["FusedMoE"], "object": path, "object_class": [cls]}, path,
                "prepare/finalize object, rebuilt with the MoE kernel; check the path")
    if "Kernel" in names:
        moe = "MoE" in names
        path = "quant_method.moe_kernel" if moe else "quant_method.kernel"
        return ({"module_class": ["FusedMoE" if moe else "LinearBase"], "object": path,
                 "object_class": [cls]}, path,
                "kernel object; check the layer class and the attribute path")
    if "Impl" in names:
        return ({"module_class": ["Attention"], "object": "impl", "object_class": [cls]}, "impl",
                "attention impl; use MLAAttention for MLA backends")
    if "Method" in names:
        return {"quant_method_class": [cls]}, "quant_method", "quant method"
    return {"module_class": ["Module"], "object": "TODO", "object_class": [cls]}, "TODO", \
        "name the module class and the path to this object"


def _owner(site: RawSite, self_owner: str) -> str:
    root, _, rest = site.owner.partition(".")
    if root in ("self", "cls"):
        base = self_owner
    elif root in _MODULE_RECEIVERS or site.owner == "<local>":
        base = ""
    else:
        base = self_owner if self_owner != "TODO" else ""
        rest = ""  # a local holding the layer (or an object on it): the skeleton's owner
    if base == "TODO":
        return "TODO"
    return ".".join(p for p in (base, rest) if p)


def _formula(site: RawSite) -> str:
    text = site.formula
    if text and text.isidentifier() and text not in ("True", "False", "None"):
        return "TODO"  # only a local's name: nothing to draft from
    if text:
        try:
            parse_formula(text)
            return text
        except (FormulaError, SyntaxError, ValueError):
            return "TODO"
    return "TODO"


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _flow(mapping: dict[str, object]) -> str:
    parts = []
    for key, value in mapping.items():
        if isinstance(value, list):
            parts.append(f"{key}: [{', '.join(str(v) for v in value)}]")
        else:
            parts.append(f"{key}: {value}")
    return "{" + ", ".join(parts) + "}"


def suggest_spec(site: RawSite, file: str) -> str:
    """A YAML spec skeleton (one list item of ``specs:``) declaring the site."""
    target, self_owner, note = _role(site)
    owner = _owner(site, self_owner)
    stem = _context_class(site) or file.rsplit("/", 1)[-1].removesuffix(".py")
    lines = [
        f"- name: {_kebab(stem)}-{_kebab(site.attr)}",
        f"  description: {_yaml_str(f'TODO: what {site.attr} holds and who reads it')}",
        f"  references: [{_yaml_str(f'{file}:{site.line}')}]",
        f"  target: {_flow(target)}  # {note}",
        "  derived:",
        f"    - name: {site.attr}",
        f"      owner: {_yaml_str(owner)}",
        f"      kind: {site.kind}",
    ]
    if site.kind is TensorKind.ALIAS:
        of = (site.alias_of or "TODO").split(".", 1)
        lines.append(f"      of: {_yaml_str(of[1] if len(of) > 1 else of[0])}")
    else:
        lines.append(f"      formula: {_yaml_str(_formula(site))}  # source: {site.expr}")
    return "\n".join(lines)
