"""Match static-audit sites against the spec library, and draft a spec for the rest.

A site is **declared** when some spec declares a derived tensor whose ``name`` is the site's
attribute and whose target names one of the site's classes:

* the target's ``module_class``, ``quant_method_class`` and ``object_class`` entries are compared
  by short name (``vllm.x.Fp8MoEMethod`` -> ``Fp8MoEMethod``) with the class that holds the
  post-load code, its ancestors, and the classes of the roots that reached it (a module-level
  helper called from ``Fp8MoEMethod.process_weights_after_loading`` counts as Fp8MoEMethod's);
* a target class that *inherits* from the site's class also matches (a spec for
  ``CutlassExpertsFp8`` declares what ``CutlassExpertsFp8Base.__init__`` stores);
* code outside any class (a free ``load_weights``) matches on the name when the last segment of
  the derived tensor's ``owner`` equals the last segment of the receiver (``layer.x`` matches an
  empty owner).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..spec import Spec
from .static_scope import MODULE_CLASS_NAMES
from .static_sites import RawSite

__all__ = ["SpecIndex", "suggest_spec"]

_MODULE_RECEIVERS = frozenset({"layer", "module", "m", "mod", "model"})


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class SpecIndex:
    """Derived-tensor names of a spec library, with the classes their targets name."""

    def __init__(self, specs: Sequence[Spec],
                 ancestors: Mapping[str, frozenset[str]] | None = None) -> None:
        self.ancestors = ancestors or {}
        self.by_name: dict[str, list[tuple[str, str, frozenset[str]]]] = {}
        for spec in specs:
            t = spec.target
            classes = frozenset(_short(c) for c in
                                [*t.module_class, *t.quant_method_class, *t.object_class])
            for d in spec.derived:
                self.by_name.setdefault(d.name, []).append((spec.name, d.owner, classes))

    def match(self, site: RawSite) -> str | None:
        """The name of the first spec that declares the site, or None."""
        site_classes = set(site.classes)
        for spec_name, owner, classes in self.by_name.get(site.attr, ()):
            if classes & site_classes:
                return spec_name
            if site.cls and any(site.cls in self.ancestors.get(c, ()) for c in classes):
                return spec_name
            if not site_classes and _owner_matches(owner, site.owner):
                return spec_name
        return None


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
        return {"module_class": ["TODO"]}, "TODO", "name the module class that holds it"
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
    if "Kernel" in names:
        path = "quant_method.moe_kernel" if "MoE" in names else "quant_method.kernel"
        return ({"module_class": ["TODO"], "object": path, "object_class": [cls]}, path,
                "kernel object; name the layer class and check the attribute path")
    if "Impl" in names:
        return ({"module_class": ["Attention"], "object": "impl", "object_class": [cls]}, "impl",
                "attention impl; use MLAAttention for MLA backends")
    if "Method" in names:
        return {"quant_method_class": [cls]}, "quant_method", "quant method"
    return {"module_class": ["TODO"], "object": "TODO", "object_class": [cls]}, "TODO", \
        "name the module class and the path to this object"


def _owner(site: RawSite, self_owner: str) -> str:
    root, _, rest = site.owner.partition(".")
    if root in ("self", "cls"):
        base = self_owner
    elif root in _MODULE_RECEIVERS:
        base = ""
    else:
        return "TODO"
    if base == "TODO":
        return "TODO"
    return ".".join(p for p in (base, rest) if p)


def _formula(site: RawSite) -> str:
    from ..expr import FormulaError, parse_formula

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
    if site.kind == "alias":
        of = (site.alias_of or "TODO").split(".", 1)
        lines.append(f"      of: {_yaml_str(of[1] if len(of) > 1 else of[0])}")
    else:
        lines.append(f"      formula: {_yaml_str(_formula(site))}  # source: {site.expr}")
    return "\n".join(lines)
