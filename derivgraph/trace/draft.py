"""Assemble draft specs from a recording and the slots the step stored.

Per stored tensor: a *source* (a parameter or buffer the step loaded or replaced from
something no longer reachable: the kernel format of a checkpoint tensor), an *alias* (the
same object as a source or as another derived tensor), a *view* (a view of a source's
storage) or a derived tensor with a formula (kind from its slot: parameter, buffer, attribute).
Python floats from ``.item()``/``float()`` become ``scalar`` entries. Each entry is declared on
the deepest module that owns it and holds every source it reads; identical per-instance
entries of one module class become one spec targeting the class.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.census import Census
from derivgraph.paths import get_path
from derivgraph.spec.kinds import TensorKind
from derivgraph.trace.formula import (
    Emitter,
    Formula,
    IntNamer,
    Unexpressible,
    address_key,
    dtype_name,
    python_path,
)
from derivgraph.trace.recorder import Recorder
from derivgraph.trace.stores import Slot, SlotKind, built_outside, stored_slots

__all__ = ["Draft", "DraftEntry", "DraftSpec", "Unexpressed", "build_draft", "revise_entries"]


@dataclass(frozen=True)
class DraftEntry:
    """One derived declaration, paths relative to the spec's target module."""

    name: str
    owner: str
    kind: TensorKind
    formula: str | None = None
    of: str | None = None
    persistent: bool = False
    alternative: str | None = None  # the formula to try if the oracle refutes this one

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TensorKind(self.kind))


@dataclass
class DraftSpec:
    """One drafted spec: a target class, params and entries."""

    name: str
    module_class: str
    quant_method_class: str | None
    params: dict[str, str]
    entries: list[DraftEntry]
    instances: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unexpressed:
    """A stored tensor no spec entry could be written for, and why."""

    path: str
    reason: str
    op: str | None = None


@dataclass
class Draft:
    """What a trace found: specs, what could not be expressed, and notes."""

    specs: list[DraftSpec]
    unexpressed: list[Unexpressed]
    sources_replaced: list[str]
    notes: list[str]
    #: why the draft may be wrong or partial though it proves: an integer named after one of
    #: several equal shapes, tensors built outside the traced step
    caveats: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Nothing expressed ambiguously, nothing derived outside the traced step."""
        return not self.caveats and not self.unexpressed

    @property
    def opaque_ops(self) -> list[str]:
        """aten ops outside our vocabulary: register them (``derivgraph.register_op``)."""
        return sorted({u.op for u in self.unexpressed if u.op})

    @property
    def declared(self) -> int:
        return sum(len(s.entries) * len(s.instances) for s in self.specs)


def _keys(spec: DraftSpec, e: DraftEntry) -> list[str]:
    return [".".join(p for p in (inst, e.owner, e.name) if p) for inst in spec.instances]


def has_alternative(draft: Draft, path: str) -> bool:
    """Whether the entry declared at model path ``path`` has an alternative formula."""
    return any(e.alternative is not None and path in _keys(s, e)
               for s in draft.specs for e in s.entries)


def revise_entries(draft: Draft, refuted: dict[str, str],
                   unproven: dict[str, str] | None = None) -> Draft:
    """``draft`` after the oracle refuted the entries declared at ``refuted``'s paths (any
    instance): an entry with an alternative formula takes it; the others are dropped and
    listed as not expressed with the oracle's reason; aliases of a dropped entry go with it.
    Entries at ``unproven``'s paths take their alternative if they have one."""
    unproven = unproven or {}
    for spec in draft.specs:
        keep = []
        dropped_names: set[str] = set()
        for e in spec.entries:
            keys = _keys(spec, e)
            hit = next((k for k in keys if k in refuted), None)
            if hit is None and e.alternative is not None and any(k in unproven for k in keys):
                hit = next(k for k in keys if k in unproven)
            if hit is not None and e.alternative is not None:
                keep.append(DraftEntry(e.name, e.owner, e.kind, formula=e.alternative,
                                       persistent=e.persistent))
            elif hit is not None or (e.kind is TensorKind.ALIAS and e.of in dropped_names):
                dropped_names.add(e.name)
                reason = refuted.get(hit, "") if hit else f"an alias of {e.of}, not declared"
                draft.unexpressed.extend(Unexpressed(k, reason) for k in keys)
            else:
                keep.append(e)
        spec.entries = keep
    draft.specs = [s for s in draft.specs if s.entries]
    return draft


def _kebab(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower().replace("_", "-")


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + ".")


def _rel(path: str, prefix: str) -> str:
    return path[len(prefix) + 1:] if prefix else path


@dataclass
class _Context:
    model: nn.Module
    recorder: Recorder
    modules: dict[str, nn.Module]
    registered: dict[int, str]  # id -> first registered path, after the step
    sources: dict[int, str] = field(default_factory=dict)
    addresses: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def emitter(self, prefix: str, extra: dict[int, str] | None = None,
                named: bool = True) -> Emitter:
        names = {k: _rel(v, prefix) for k, v in {**self.sources, **(extra or {})}.items()
                 if _under(v, prefix)}
        addresses = {k: _rel(v, prefix) for k, v in self.addresses.items() if _under(v, prefix)}
        module = self.modules[prefix]
        params = [n for n, _ in module.named_parameters()] + [n for n, _ in
                                                               module.named_buffers()]
        ints = IntNamer(module if named else None, lambda t: id(t) in self.sources)
        return Emitter(self.recorder, names, addresses, ints, params)


def _registered(model: nn.Module) -> dict[int, str]:
    out: dict[int, str] = {}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for registry in (module._parameters, module._buffers):
            for name, t in registry.items():
                if isinstance(t, torch.Tensor):
                    out.setdefault(id(t), f"{prefix}.{name}" if prefix else name)
    return out


def _classify_sources(ctx: _Context, slots: list[Slot], notes: list[str]) -> list[str]:
    """Registered tensors the step did not derive: unchanged ones, loaded ones, and ones that
    replaced a checkpoint tensor which is no longer reachable. Returns the replaced paths."""
    stored_paths = {s.path for s in slots}
    for tid, path in ctx.registered.items():
        if path not in stored_paths:
            ctx.sources[tid] = path
    pending = {id(s.value): s.path for s in slots
               if s.kind in (SlotKind.PARAMETER, SlotKind.BUFFER)
               and isinstance(s.value, torch.Tensor) and id(s.value) not in ctx.sources}
    replaced = []
    for tid, path in pending.items():
        t = next(s.value for s in slots if id(s.value) == tid)
        hit = ctx.recorder.producer_of(t)
        if hit is not None and hit[0].name.endswith("_"):
            ctx.sources[tid] = path  # loaded in place: a checkpoint tensor
            continue
        others = {k: v for k, v in pending.items() if k != tid}
        try:
            ctx.emitter("", extra=others, named=False).emit(ctx.recorder.ref(t))
        except Unexpressible:
            ctx.sources[tid] = path
            replaced.append(path)
    for tid, path in ctx.sources.items():
        t = _find(ctx, tid)
        if t is not None and t.device.type != "meta":
            ctx.addresses.setdefault(address_key(t), path)
    for node in ctx.recorder.nodes:
        target = node.outputs[0] if node.outputs else None
        if node.name.endswith("_") and target is not None and id(target) in ctx.sources \
                and node.weighty and node.name not in ("copy_",):
            notes.append(f"{ctx.sources[id(target)]} is modified in place by the step "
                         f"({node.overload}): its kernel-format value is not the checkpoint's")
    return replaced


def _find(ctx: _Context, tid: int) -> torch.Tensor | None:
    for module in ctx.modules.values():
        for registry in (module._parameters, module._buffers):
            for t in registry.values():
                if id(t) == tid:
                    return t
    return None


def _target(ctx: _Context, owner: str, sources: frozenset[str]) -> str:
    best = ""
    for prefix in ctx.modules:
        if _under(owner, prefix) and all(_under(s, prefix) for s in sources):
            if len(prefix) > len(best) or (prefix and not best):
                best = prefix
    return best


def _shares_storage(t: torch.Tensor, sources: frozenset[str], model: nn.Module) -> bool:
    try:
        ptr = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return False
    for s in sources:
        src = get_path(model, s)
        if isinstance(src, torch.Tensor) and src.untyped_storage().data_ptr() == ptr:
            return True
    return False


def build_draft(model: nn.Module, recorder: Recorder, before: Census | None,
                after: Census) -> Draft:
    """Draft specs for everything the recorded step stored on ``model``."""
    modules = dict(model.named_modules())
    ctx = _Context(model, recorder, modules, _registered(model))
    slots = stored_slots(model, before, after, recorder.written_in_place)
    notes: list[str] = []
    unexpressed: list[Unexpressed] = []
    replaced = _classify_sources(ctx, slots, notes)
    config: list[str] = []  # Python numbers read from no tensor: config, not weight-derived
    ambiguous: dict[str, list[str]] = {}

    # (instance prefix, entry) for every declaration, plus the params each used
    per_instance: dict[str, list[DraftEntry]] = {}
    params: dict[str, dict[str, str]] = {}
    primary: dict[int, tuple[str, str]] = {}  # id -> (instance prefix, relative path)

    def add(prefix: str, entry: DraftEntry, used: dict[str, str]) -> None:
        per_instance.setdefault(prefix, []).append(entry)
        params.setdefault(prefix, {}).update(used)

    for slot in slots:
        if slot.unbindable:
            unexpressed.append(Unexpressed(slot.path, slot.unbindable))
            continue
        value = slot.value
        if slot.kind is SlotKind.SCALAR:
            _scalar(ctx, slot, add, unexpressed, config)
            continue
        if id(value) in ctx.sources:
            src = ctx.sources[id(value)]
            holder = get_path(model, slot.owner)
            if src == slot.path or (isinstance(holder, nn.Module) and (
                    holder._parameters.get(slot.name) is value
                    or holder._buffers.get(slot.name) is value)):
                continue  # a source itself, maybe reached through a new list of its module
            prefix = _target(ctx, slot.owner, frozenset({src}))
            rel_src = _rel(src, prefix)
            if any(p.isdigit() for p in rel_src.split(".")):
                unexpressed.append(Unexpressed(slot.path, f"the same object as {src}, a path "
                                               "through a list index, which `of` cannot name"))
                continue
            add(prefix, DraftEntry(slot.name, _rel(slot.owner, prefix), TensorKind.ALIAS,
                                   of=rel_src), {})
            continue
        if id(value) in primary:
            first_prefix, first_rel = primary[id(value)]
            prefix = first_prefix if _under(slot.owner, first_prefix) else None
            if prefix is None:
                unexpressed.append(Unexpressed(slot.path, f"the same object as {first_rel} of "
                                               "another target; declare the alias by hand"))
                continue
            add(prefix, DraftEntry(slot.name, _rel(slot.owner, prefix), TensorKind.ALIAS,
                                   of=first_rel), {})
            continue
        try:
            probe = ctx.emitter("", named=False).emit(recorder.ref(value))
            prefix = _target(ctx, slot.owner, probe.sources)
            emitter = ctx.emitter(prefix)
            formula: Formula = emitter.emit(recorder.ref(value))
        except Unexpressible as exc:
            unexpressed.append(Unexpressed(slot.path, exc.reason, exc.op))
            continue
        if slot.kind is SlotKind.PARAMETER and not isinstance(value, nn.Parameter):
            unexpressed.append(Unexpressed(slot.path, "a parameter slot without a Parameter"))
            continue
        rel_owner = _rel(slot.owner, prefix)
        primary[id(value)] = (prefix, f"{rel_owner}.{slot.name}" if rel_owner else slot.name)
        if formula.identity_of is not None:
            if any(p.isdigit() for p in formula.identity_of.split(".")):
                unexpressed.append(Unexpressed(slot.path, f"shares {formula.identity_of}'s "
                                               "memory, a path through a list index, which "
                                               "`of` cannot name"))
                continue
            add(prefix, DraftEntry(slot.name, rel_owner, TensorKind.ALIAS,
                                   of=formula.identity_of), {})
            continue
        kind = TensorKind(slot.kind.value)
        if kind is TensorKind.ATTRIBUTE and _shares_storage(value, probe.sources, model):
            kind = TensorKind.VIEW
        alternative = None
        if not formula.sources:  # a constant, or a copy of a source read through .tolist()?
            copy = _copy_of_one_element_source(ctx, slot.owner, value)
            if copy is not None:
                prefix, rel_owner = copy[0], _rel(slot.owner, copy[0])
                primary[id(value)] = (prefix, f"{rel_owner}.{slot.name}" if rel_owner
                                      else slot.name)
                formula, alternative = Formula(copy[1]), formula.text
        add(prefix, DraftEntry(slot.name, rel_owner, kind, formula=formula.text,
                               persistent=slot.persistent, alternative=alternative),
            emitter.ints.used)
        ambiguous.update({k: v for k, v in emitter.ints.ambiguous.items()
                          if k in emitter.ints.used})

    specs = _generalise(ctx, per_instance, params, primary, notes)
    caveats = [f"ambiguous: {name} = {' or '.join(exprs)} (equal in the traced model; the draft "
               f"uses {exprs[0]}): check it, or trace a model where they differ"
               for name, exprs in sorted(ambiguous.items())]
    caveats += built_outside(before, {s.path for s in slots}, set(ctx.registered))
    if config:
        notes.append(f"{len(config)} Python number(s) read from no tensor (config, not "
                     f"declared): {', '.join(config[:6])}" + (" ..." if len(config) > 6 else ""))
    return Draft(specs, unexpressed, replaced, notes, caveats)


def _one_element_sources(ctx: _Context, owner: str, value: float) -> list[tuple[str, Any]]:
    """Floating one-element sources of ``owner``'s module holding exactly ``value``:
    ``.tolist()`` and ``fill_(python_float)`` read memory without an op the recording sees."""
    module = _target(ctx, owner, frozenset())
    out = []
    for tid, path in ctx.sources.items():
        t = _find(ctx, tid)
        if (t is not None and _under(path, module) and t.numel() == 1
                and t.is_floating_point() and float(t) == value):
            out.append((path, t))
    return out


def _copy_of_one_element_source(ctx: _Context, owner: str,
                                value: Any) -> tuple[str, str] | None:
    """(target prefix, formula) copying a one-element source equal to the one-element float
    tensor ``value`` (a host copy filled from ``k_scale.tolist()``), or None."""
    if not (isinstance(value, torch.Tensor) and value.numel() == 1
            and value.is_floating_point() and value.device.type != "meta"):
        return None
    for path, src in _one_element_sources(ctx, owner, float(value)):
        prefix = _target(ctx, owner, frozenset({path}))
        text = python_path(_rel(path, prefix))
        text = f"cast({text}, {dtype_name(value.dtype)})" if src.dtype != value.dtype else \
            f"clone({text})"
        if tuple(src.shape) != tuple(value.shape):
            text = f"reshape({text}, [{', '.join(str(int(d)) for d in value.shape)}])"
        return prefix, text
    return None


def _scalar(ctx: _Context, slot: Slot, add: Any, unexpressed: list[Unexpressed],
            config: list[str]) -> None:
    matches = [ref for value, ref in reversed(ctx.recorder.scalars)
               if type(value) is type(slot.value) and value == slot.value]
    # .tolist() reads memory without an op, and a read tensor may be gone after the step: fall
    # back to a one-element source of the owner's module holding exactly this value
    matches += [ctx.recorder.ref(t) for _, t in _one_element_sources(ctx, slot.owner,
                                                                       slot.value)]
    if not matches:
        config.append(slot.path)
        return
    failure: Unexpressible | None = None
    for ref in matches:
        try:
            probe = ctx.emitter("", named=False).emit(ref)
            prefix = _target(ctx, slot.owner, probe.sources)
            emitter = ctx.emitter(prefix)
            formula = emitter.emit(ref)
            break
        except Unexpressible as exc:
            failure = failure or exc
    else:
        assert failure is not None
        unexpressed.append(Unexpressed(slot.path, failure.reason, failure.op))
        return
    add(prefix, DraftEntry(slot.name, _rel(slot.owner, prefix), TensorKind.SCALAR,
                           formula=formula.text), emitter.ints.used)


def _split_conflicts(entries: list[DraftEntry]) -> list[list[DraftEntry]]:
    """Entries in groups where an alias's target name is unambiguous: a derived tensor that
    shares its name with an alias target (``g1_scale_c`` on the layer and on the quant config)
    goes to another spec of the same target, with its own aliases."""
    def path(e: DraftEntry) -> str:
        return f"{e.owner}.{e.name}" if e.owner else e.name

    derived = {path(e): e for e in entries if e.kind is not TensorKind.ALIAS}
    targets = {e.of for e in entries if e.kind is TensorKind.ALIAS and e.of in derived}
    names = {derived[t].name for t in targets}
    moved = {path(e) for e in entries if e.kind is not TensorKind.ALIAS and e.name in names
             and path(e) not in targets}
    if not moved:
        return [entries]
    rest = [e for e in entries if path(e) not in moved and not (e.kind is TensorKind.ALIAS
                                                                 and e.of in moved)]
    return [rest, *_split_conflicts([e for e in entries if e not in rest])]


def _alias_names(entries: list[DraftEntry]) -> list[DraftEntry]:
    """``of`` names a derived tensor of the spec by name when that name is unique in it."""
    counts = Counter(e.name for e in entries)
    by_path = {(f"{e.owner}.{e.name}" if e.owner else e.name): e for e in entries
               if e.kind is not TensorKind.ALIAS}
    out = []
    for e in entries:
        if e.kind is TensorKind.ALIAS and e.of in by_path:
            target = by_path[e.of]
            e = DraftEntry(e.name, e.owner, TensorKind.ALIAS,
                           of=target.name if counts[target.name] == 1 else python_path(e.of))
        out.append(e)
    return out


def _generalise(ctx: _Context, per_instance: dict[str, list[DraftEntry]],
                params: dict[str, dict[str, str]], primary: dict[int, tuple[str, str]],
                notes: list[str]) -> list[DraftSpec]:
    by_class: dict[type, list[str]] = {}
    for prefix in per_instance:
        by_class.setdefault(type(ctx.modules[prefix]), []).append(prefix)
    specs = []
    for cls, prefixes in by_class.items():
        variants = Counter(
            (tuple(_alias_names(per_instance[p])), tuple(sorted(params.get(p, {}).items())))
            for p in prefixes)
        (entries, used), _ = variants.most_common(1)[0]
        instances = [p for p in prefixes if (tuple(_alias_names(per_instance[p])),
                                             tuple(sorted(params.get(p, {}).items())))
                     == (entries, used)]
        spec_notes = []
        if len(variants) > 1:
            others = [p or "<model>" for p in prefixes if p not in instances]
            spec_notes.append(f"instances {', '.join(others)} store something else; this spec "
                              "follows the most common variant")
        all_instances = [p for p, m in ctx.modules.items() if type(m) is cls]
        missing = [p or "<model>" for p in all_instances if p not in per_instance]
        if missing:
            spec_notes.append(f"{len(missing)} other instance(s) of {cls.__name__} stored "
                              f"nothing ({', '.join(missing[:4])}); add a `where` gate")
        qm = getattr(ctx.modules[instances[0]], "quant_method", None)
        groups = _split_conflicts([e for p in instances[:1] for e in per_instance[p]])
        for i, group in enumerate(groups):
            specs.append(DraftSpec(
                name=f"traced-{_kebab(cls.__name__)}" + (f"-{i + 1}" if i else ""),
                module_class=cls.__name__,
                quant_method_class=type(qm).__name__ if qm is not None else None,
                params=dict(used),
                entries=_alias_names(group),
                instances=instances,
                notes=spec_notes if not i else [],
            ))
        notes.extend(f"{cls.__name__}: {n}" for n in spec_notes)
    return specs
