"""Match specs to a live ``nn.Module``: which module each spec applies to, and whether binding
there is safe (owners, names, tuple holders).

Matching reads class names and attributes only; it imports nothing from the engine.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, attrgetter, contains, is_, is_not, itemgetter
from typing import Any

import torch
from torch import nn

from derivgraph.errors import FormulaError, Rule, SpecIssue, SpecValidationError
from derivgraph.paths import (
    MISSING,
    ModuleOwners,
    get_path,
    holder_dict,
    join,
    matches_class,
)
from derivgraph.spec.kinds import TensorKind
from derivgraph.spec.model import DerivedTensor, Spec, Target, split_type_name

__all__ = ["BoundSpec", "BoundSpecs", "check_bindings", "container_problem", "is_container",
           "match_specs", "modules_of", "named_modules", "paths_of", "rows_of", "specs_of",
           "target_matches"]


@dataclass(slots=True)
class BoundSpec:
    """A spec applied to one module of the model."""

    spec: Spec
    module_path: str
    module: nn.Module

    def qualify(self, path: str) -> str:
        """A path from the module, made relative to the model root."""
        return join(self.module_path, path)

    def relative(self, path: str) -> str | None:
        """``path`` (from the model root) from the module, None when it is not under it."""
        if not self.module_path:
            return path
        prefix = self.module_path + "."
        return path[len(prefix):] if path.startswith(prefix) else None


class BoundSpecs(Sequence[BoundSpec]):
    """Bound specs held as columns, one list per field: each row's spec, module path and
    module (what :func:`match_specs` gives; a run of one spec's rows holds one spec object
    repeated). Row ``i``'s :class:`BoundSpec` is made when it is read (``bounds[i]``,
    iteration) and not kept, so a run held by the graph keeps three lists, not a record
    per row; a reader that sweeps a field takes its column (:func:`specs_of`,
    :func:`paths_of`, :func:`modules_of`: the held list itself, never to be written). A
    slice, :meth:`take` and :meth:`of` are columns too. Only the build appends
    (:meth:`append`, :meth:`extend`), before any reader holds the lists."""

    __slots__ = ("modules", "paths", "specs")

    def __init__(self, specs: list[Spec], paths: list[str], modules: list[nn.Module]) -> None:
        self.specs, self.paths, self.modules = specs, paths, modules

    @classmethod
    def of(cls, rows: Iterable[BoundSpec]) -> BoundSpecs:
        """``rows`` as columns (``rows`` itself where it is held so)."""
        if type(rows) is BoundSpecs:
            return rows
        rows = list(rows)
        return cls(list(map(_SPEC, rows)), list(map(_PATH, rows)), list(map(_MODULE, rows)))

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, at: Any) -> Any:  # BoundSpec, or BoundSpecs for a slice
        if type(at) is slice:
            return BoundSpecs(self.specs[at], self.paths[at], self.modules[at])
        return BoundSpec(self.specs[at], self.paths[at], self.modules[at])

    def __iter__(self) -> Iterator[BoundSpec]:
        return map(BoundSpec, self.specs, self.paths, self.modules)

    def __repr__(self) -> str:
        return f"BoundSpecs({list(self)!r})"

    def take(self, rows: Iterable[int]) -> BoundSpecs:
        """The rows at positions ``rows``, in that order."""
        rows = list(rows)
        return BoundSpecs(list(map(self.specs.__getitem__, rows)),
                          list(map(self.paths.__getitem__, rows)),
                          list(map(self.modules.__getitem__, rows)))

    def append(self, bound: BoundSpec) -> None:
        """Add ``bound``'s fields as a last row."""
        self.specs.append(bound.spec)
        self.paths.append(bound.module_path)
        self.modules.append(bound.module)

    def extend(self, bounds: Sequence[BoundSpec]) -> None:
        """Add every row of ``bounds`` (columns read whole)."""
        self.specs += specs_of(bounds)
        self.paths += paths_of(bounds)
        self.modules += modules_of(bounds)


def rows_of(bounds: Sequence[BoundSpec], rows: Iterable[int]) -> Sequence[BoundSpec]:
    """The rows of ``bounds`` at positions ``rows``, in that order (columns for a
    :class:`BoundSpecs`, :meth:`BoundSpecs.take`; else a list of its rows)."""
    if type(bounds) is BoundSpecs:
        return bounds.take(rows)
    return list(map(bounds.__getitem__, rows))


def specs_of(bounds: Sequence[BoundSpec]) -> list[Spec]:
    """Each row's spec: the held column of a :class:`BoundSpecs` (not to be written), else
    one sweep."""
    return bounds.specs if type(bounds) is BoundSpecs else list(map(_SPEC, bounds))


def paths_of(bounds: Sequence[BoundSpec]) -> list[str]:
    """Each row's module path (as :func:`specs_of`)."""
    return bounds.paths if type(bounds) is BoundSpecs else list(map(_PATH, bounds))


def modules_of(bounds: Sequence[BoundSpec]) -> list[nn.Module]:
    """Each row's module (as :func:`specs_of`)."""
    return bounds.modules if type(bounds) is BoundSpecs else list(map(_MODULE, bounds))


def _is_one_of(value: Any, options: Any) -> bool:
    options = options if isinstance(options, list) else [options]
    if not isinstance(value, (int, float, str)) and value is not None:
        value = getattr(value, "value", value)  # enums compare by value
    return value in options or str(value) in [str(o) for o in options]


def _where_holds(module: nn.Module, where: dict[str, Any]) -> bool:
    """Every predicate holds: ``path: value``, ``path: [values]`` or ``path: {not: values}``."""
    for path, wanted in where.items():
        base, type_attr = split_type_name(path)
        value = get_path(module, base)
        if value is MISSING:
            return False
        if type_attr is not None:
            value = getattr(type(value), type_attr)
        if isinstance(value, torch.Tensor):
            raise FormulaError(Rule.INFERENCE, f"target.where {path!r} is a tensor; a where "
                               "predicate compares config values (numbers, strings, enums)",
                               "compare a config attribute, not a weight")
        if isinstance(wanted, dict) and set(wanted) == {"not"}:
            if _is_one_of(value, wanted["not"]):
                return False
        elif not _is_one_of(value, wanted):
            return False
    return True


def target_matches(target: Target, module: nn.Module,
                   classes: dict[tuple[type, int], bool] | None = None) -> bool:
    """True if ``target`` applies to ``module``. ``classes`` memoizes the class test per
    (module class, id of ``target``) for one sweep: it reads only the class's MRO."""
    if target.module_class:
        if classes is None:
            ok = matches_class(module, target.module_class)
        else:
            key = (type(module), id(target))
            ok = classes.get(key)
            if ok is None:
                ok = classes[key] = matches_class(module, target.module_class)
        if not ok:
            return False
    if target.quant_method_class:
        qm = getattr(module, "quant_method", None)
        if qm is None or not matches_class(qm, target.quant_method_class):
            return False
    if target.object:
        obj = get_path(module, target.object)
        if obj is MISSING or obj is None:
            return False
        if target.object_class and not matches_class(obj, target.object_class):
            return False
    return _where_holds(module, target.where)


def _class_only(target: Target) -> bool:
    """Whether :func:`target_matches` reads only the module's class for ``target``: no
    quant-method class, object or where predicate (its class test is of ``type(module)``'s
    MRO)."""
    return not (target.quant_method_class or target.object or target.where)


def match_specs(model: nn.Module, specs: Iterable[Spec]) -> BoundSpecs:
    """Every (spec, module) pair where the spec's target matches, in module order (as
    columns: :class:`BoundSpecs`)."""
    specs = list(specs)
    modules = named_modules(model)
    if specs and all(_class_only(spec.target) for spec in specs):
        taken = _match_by_class(modules, specs)
        if taken is not None:
            return taken
    bound = BoundSpecs([], [], [])
    issues: dict[str, SpecIssue] = {}
    classes: dict[tuple[type, int], bool] = {}  # (module class, id(target)) -> class test
    by_class: dict[tuple[type, int], bool] = {}  # (module class, id(spec)) -> the answer of
    # a target that reads only the module's class (target_matches asked once per class)
    for path, module in modules:
        cls = type(module)
        for spec in specs:
            ok = by_class.get((cls, id(spec)))
            if ok is None:
                try:
                    ok = target_matches(spec.target, module, classes)
                except FormulaError as exc:
                    issues.setdefault(spec.name, SpecIssue(exc.rule, exc.message, exc.fix,
                                                           spec.target.location, spec.name))
                    continue
                if _class_only(spec.target):
                    by_class[cls, id(spec)] = ok
            if ok:
                bound.specs.append(spec)
                bound.paths.append(path)
                bound.modules.append(module)
    if issues:
        raise SpecValidationError(list(issues.values()))
    return bound


def _match_by_class(modules: list[tuple[str, nn.Module]],
                    specs: list[Spec]) -> BoundSpecs | None:
    """:func:`match_specs` where every target reads only the module's class: each class's
    answers asked of its first module, classes in the order they first appear, specs in
    order (the calls the loop makes, in its order); each row takes its class's answers
    (made in C-level sweeps where no class matches two specs). None where a target raises
    a :class:`FormulaError` (the loop then reports it as it does)."""
    paths, objs = list(map(_FIRST, modules)), list(map(_SECOND, modules))
    row_classes = list(map(type, objs))
    samples = dict(zip(reversed(row_classes), reversed(objs)))  # each class's first module
    classes: dict[tuple[type, int], bool] = {}
    answers: dict[type, list[Spec]] = {}
    try:
        for cls in dict.fromkeys(row_classes):
            answers[cls] = [spec for spec in specs
                            if target_matches(spec.target, samples[cls], classes)]
    except FormulaError:
        return None
    if any(len(matched) > 1 for matched in answers.values()):
        rows = [(spec, path, module) for (path, module), cls in zip(modules, row_classes)
                for spec in answers[cls]]
        return BoundSpecs(list(map(_FIRST, rows)), list(map(_SECOND, rows)),
                          list(map(_THIRD, rows)))
    one = {cls: matched[0] if matched else None for cls, matched in answers.items()}
    hit = list(map(one.__getitem__, row_classes))
    keep = list(map(is_not, hit, repeat(None)))
    return BoundSpecs(list(compress(hit, keep)), list(compress(paths, keep)),
                      list(compress(objs, keep)))


_FIRST, _SECOND, _THIRD = itemgetter(0), itemgetter(1), itemgetter(2)


def named_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``list(model.named_modules())``: walked here where every module's walk is
    ``nn.Module``'s own (:func:`_own_walk`), a module whose children are all leaves taking
    them in C-level sweeps; anywhere else torch's walk, whole. The same ``memo`` set as
    torch's (so a module's own ``__hash__``/``__eq__`` decide repeats) and the same
    ``_modules`` reads; every module is read before any is answered (a caller that writes
    ``_modules`` while it iterates is not one of the compile's)."""
    out: list[tuple[str, nn.Module]] = []
    if _walk(model, "", set(), out, {}):
        return out
    return list(model.named_modules())


_NAMED_MODULES = nn.Module.named_modules
_MODULES, _DICT = attrgetter("_modules"), attrgetter("__dict__")


def _own_walk(cls: type, own: dict[type, bool]) -> bool:
    """Whether ``cls``'s ``named_modules`` and attribute reads are ``nn.Module``'s (memoized
    in ``own``)."""
    ok = own.get(cls)
    if ok is None:
        ok = own[cls] = getattr(cls, "named_modules", None) is _NAMED_MODULES \
            and cls.__getattribute__ is object.__getattribute__
    return ok


def _walk(module: nn.Module, prefix: str, memo: set[nn.Module],
          out: list[tuple[str, nn.Module]], own: dict[type, bool]) -> bool:
    """torch's ``module.named_modules(memo, prefix)``, appended to ``out``; False (``out``
    partial) where some module's walk is not proved nn.Module's."""
    if not _own_walk(type(module), own) or "named_modules" in module.__dict__:
        return False
    if module in memo:
        return True
    memo.add(module)
    out.append((prefix, module))
    children = module._modules
    if type(children) is not dict:
        return False
    kids = list(children.values())
    if kids and _leaves(kids, own):  # each child a leaf: yielded where none is a repeat
        before = len(memo)
        memo.update(kids)
        if len(memo) != before + len(kids):
            return False  # one was in memo or repeated (the set's own tests): torch's walk
        out += zip(map(add, repeat(prefix + "." if prefix else ""), children), kids)
        return True
    for name, child in children.items():
        if child is not None and not _walk(child, prefix + ("." if prefix else "") + name,
                                           memo, out, own):
            return False
    return True


def _leaves(kids: list[Any], own: dict[type, bool]) -> bool:
    """Whether each of ``kids`` is a module whose walk is ``nn.Module``'s and that holds an
    empty ``_modules`` dict (none is None): torch's walk yields each one that is not a
    repeat, and nothing below it."""
    if any(map(is_, kids, repeat(None))) \
            or not all(_own_walk(cls, own) for cls in set(map(type, kids))) \
            or any(map(contains, map(_DICT, kids), repeat("named_modules"))):
        return False
    subs = list(map(_MODULES, kids))
    return all(map(is_, map(type, subs), repeat(dict))) and not any(subs)


# Objects a spec may never bind onto: classes, Python modules, functions and methods,
# tensors, and immutable values (binding on them rewrites the program or cannot work).
_NOT_OWNERS = (type, types.ModuleType, torch.Tensor, int, float, complex, str, bytes, bool,
               tuple, frozenset)


def _owner_problem(owner: Any) -> str | None:
    if isinstance(owner, _NOT_OWNERS) or inspect.isroutine(owner):
        kind = "class" if isinstance(owner, type) else \
            "Python module" if isinstance(owner, types.ModuleType) else \
            "function" if inspect.isroutine(owner) else type(owner).__name__
        return f"the owner is a {kind}, not an object that holds tensors"
    return None


def _class_member(owner: Any, name: str) -> str | None:
    """The kind of class-level member ``name`` is on ``type(owner)`` (method, property), if any.

    Plain class attributes (dataclass defaults) and ``__slots__`` members are instance slots,
    not members.
    """
    try:
        static = inspect.getattr_static(type(owner), name)
    except AttributeError:
        return None
    if isinstance(static, (types.MemberDescriptorType, types.GetSetDescriptorType)):
        return None
    if isinstance(static, (property, classmethod, staticmethod)) or inspect.isroutine(static):
        return type(static).__name__
    if isinstance(static, type):
        return "class"
    if hasattr(type(static), "__get__"):
        return "descriptor"
    return None


def _binding_problem(owner: Any, decl: DerivedTensor,
                     members: dict[Any, str | None]) -> str | None:
    """Why binding ``decl`` on ``owner`` would replace something that is not a tensor slot.

    ``members`` memoizes :func:`_class_member` per (class, name) and :func:`_owner_problem`
    per class (every test it makes is of the owner's type) for one check.
    """
    cls = type(owner)
    if owner.__class__ is not cls:  # isinstance reads __class__: not a test of the type
        problem = _owner_problem(owner)
    elif cls in members:
        problem = members[cls]
    else:
        problem = members[cls] = _owner_problem(owner)
    if problem:
        return problem
    name = decl.name
    key = (cls, name)
    if key not in members:
        members[key] = _class_member(owner, name)
    member = members[key]
    if member is not None:
        return f"{type(owner).__name__}.{name} is a {member} of the owner's class"
    current = get_path(owner, name)
    if current is MISSING or isinstance(current, torch.Tensor):
        return None
    if current is None:
        return None if decl.replace else (
            f"{type(owner).__name__}.{name} is None; binding would replace it")
    if decl.kind == TensorKind.SCALAR and isinstance(current, (int, float)) and \
            not isinstance(current, bool):
        return None
    what = "a callable" if callable(current) else f"a {type(current).__name__}"
    return f"{type(owner).__name__}.{name} holds {what}; binding would replace it"


def check_bindings(bound: Iterable[BoundSpec]) -> list[SpecIssue]:
    """Owner and name safety (``DG015``) and declared devices (``DG017``) of matched specs.

    Reads only; runs before any tensor is computed or any attribute is set.
    """
    bound = BoundSpecs.of(bound)
    issues: list[SpecIssue] = []
    members: dict[Any, str | None] = {}
    by_spec = _by_spec(bound)
    free = _free_names(by_spec, members)
    quiet = {key for key, (spec, _) in by_spec.items() if all(  # their rows report nothing
        (key, id(decl)) in free and not _device_path(decl) for decl in spec.derived)}
    if len(quiet) == len(by_spec):
        return issues  # every row's spec is quiet: each row would be skipped
    for b in bound:
        if id(b.spec) in quiet:
            continue
        for decl in b.spec.derived:
            owner = MISSING if (id(b.spec), id(decl)) in free else get_path(b.module, decl.owner)
            if owner is not MISSING and owner is not None:
                # a tuple owner is kept whole (derivgraph.runtime.containers), never bound into
                problem = container_problem(b.module, decl, owner)
                if problem:
                    issues.append(SpecIssue(Rule.CONTAINER_HOLDER, problem,
                                            "declare tensor items of a tuple held in a plain "
                                            "attribute (owner: the tuple, name: the item's index, "
                                            "kind: attribute)", decl.location,
                                            _node_id(b, decl)))
                    continue
                problem = None if is_container(owner) else \
                    _binding_problem(owner, decl, members)
                if problem:
                    fix = ("set `replace: true` if the engine leaves None there to be filled"
                           if "is None" in problem else
                           "bind only attributes that hold tensors (or nothing yet); choose "
                           "another name or owner")
                    issues.append(SpecIssue(Rule.UNSAFE_NAME, problem, fix, decl.location,
                                            _node_id(b, decl)))
            if _device_path(decl):
                value = get_path(b.module, decl.device)
                if not isinstance(value, (torch.Tensor, torch.device)):
                    issues.append(SpecIssue(
                        Rule.UNKNOWN_DEVICE, f"device {decl.device!r} is neither a device nor a "
                        f"path to a tensor on {type(b.module).__name__}",
                        "write cpu, cuda or cuda:N, or the path of a tensor whose device to use",
                        decl.location, _node_id(b, decl)))
    return issues


def _by_spec(bound: BoundSpecs) -> dict[int, tuple[Spec, list[nn.Module]]]:
    """id(spec) -> the spec and its modules, in ``bound``'s order (specs by first match);
    where every row has one spec (the common case), its modules column (a copy)."""
    specs = bound.specs
    if specs and all(map(is_, specs, repeat(specs[0]))):
        return {id(specs[0]): (specs[0], list(bound.modules))}
    by_spec: dict[int, tuple[Spec, list[nn.Module]]] = {}
    for spec, module in zip(specs, bound.modules):
        got = by_spec.get(id(spec))
        if got is None:
            got = by_spec[id(spec)] = (spec, [])
        got[1].append(module)
    return by_spec


def _device_path(decl: DerivedTensor) -> bool:
    """Whether ``decl.device`` is read as a path on each module (``DG017`` if it holds no
    tensor or device there): neither a device nor a device name."""
    if not decl.device:
        return False
    from derivgraph.spec.check import check_device

    return check_device(decl.device) is None and not _is_device_name(decl.device)


def _free_names(by_spec: dict[int, tuple[Spec, list[nn.Module]]],
                members: dict[Any, str | None]) -> set[tuple[int, int]]:
    """(id(spec), id(decl)) of the declarations on the matched module itself whose name is
    proven free on every module the spec matched (``by_spec``: id(spec) -> the spec, its
    modules): no module holds it (:func:`~derivgraph.paths.absent_on_modules`) and each class
    passes the owner and member checks of :func:`_binding_problem` (memoized in ``members``,
    as there), so neither :func:`_binding_problem` nor :func:`container_problem` can find a
    problem on one."""
    free: set[tuple[int, int]] = set()
    for spec, modules in by_spec.values():
        samples = {type(m): m for m in reversed(modules)}  # the first module of each class
        owners = ModuleOwners(modules)  # read once for every name (nothing writes here)
        for decl in spec.derived:
            name = decl.name
            if decl.owner or not name or "." in name or name.isdigit():
                continue
            if owners.absent(name) and all(
                    _class_free(m, name, members) for m in samples.values()):
                free.add((id(spec), id(decl)))
    return free


def _class_free(owner: nn.Module, name: str, members: dict[Any, str | None]) -> bool:
    """Whether ``owner``'s class (``owner.__class__`` is its type) passes the class-level
    checks of :func:`_binding_problem` for ``name`` and is no tuple (a container)."""
    cls = type(owner)
    if cls not in members:
        members[cls] = _owner_problem(owner)
    key = (cls, name)
    if key not in members:
        members[key] = _class_member(owner, name)
    return members[cls] is None and members[key] is None and not is_container(owner)


def _node_id(b: BoundSpec, decl: DerivedTensor) -> str:
    """The derived tensor's node id (made only for an issue)."""
    return join(b.qualify(decl.owner), decl.name)


_SPEC, _PATH, _MODULE = attrgetter("spec"), attrgetter("module_path"), attrgetter("module")


def is_container(obj: Any) -> bool:
    """True for an immutable container a derived tensor may live in (a tuple)."""
    return isinstance(obj, tuple)


def container_problem(module: Any, decl: DerivedTensor, owner: Any) -> str | None:
    """Why ``decl`` (whose owner, at ``decl.owner`` from ``module``, is ``owner``) cannot be
    kept in its tuple; None when the tuple can be put back after every load."""
    if not is_container(owner):
        if decl.name.isdigit():
            return (f"the name {decl.name!r} is an item index, but the owner is a "
                    f"{type(owner).__name__}, not a tuple")
        return None
    cls = type(owner)
    if cls is not tuple and not hasattr(cls, "_fields"):
        return f"the owner is a {cls.__name__} (a tuple subclass that is not a namedtuple)"
    if not decl.name.isdigit() or int(decl.name) >= len(owner):
        return (f"the owner is a tuple of {len(owner)} items; {decl.name!r} is not an index "
                "of one")
    if decl.kind != TensorKind.ATTRIBUTE:
        return f"a tuple item is declared as kind 'attribute', not '{decl.kind}'"
    if not isinstance(owner[int(decl.name)], torch.Tensor):
        return (f"item {decl.name} of the tuple holds a {type(owner[int(decl.name)]).__name__}, "
                "not a tensor the engine built")
    parent_path, _, key = decl.owner.rpartition(".")
    parent = get_path(module, parent_path)
    where = holder_dict(parent, key) if parent is not MISSING and parent is not None else None
    if where is None or (isinstance(parent, nn.Module) and where[0] is not parent.__dict__):
        return (f"the tuple at {decl.owner!r} is not held in a plain attribute or dict item of "
                f"a {type(parent).__name__}, so it cannot be put back after a load")
    return None


def _is_device_name(text: str) -> bool:
    head = text.split(":")[0]
    return head in ("cpu", "cuda", "meta")
