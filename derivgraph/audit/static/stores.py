"""Store rules of the static audit: assignments to attributes (and items of containers held
on objects) that keep derived state: new tensors, references, host scalars, captured tensors,
lazy caches and rebound ``.data``.

A mixin of :class:`.rules.FunctionAudit`, like :class:`.calls.CallRules`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from derivgraph.audit.static.ast import (
    free_names,
    is_getattr,
    owner_attr,
    owner_base,
    short,
    walk_no_lambda,
)
from derivgraph.audit.static.infer import TensorInference, TensorInfo, attr_chain, call_name
from derivgraph.audit.static.returned_copies import refilled_in_place, returned_copies
from derivgraph.audit.static.scope import ModuleScope, Reached
from derivgraph.audit.static.sites import CategoryId
from derivgraph.audit.static.values import (
    COPY_METHODS,
    LOADED_NAMES,
    WEIGHT_FREE_RE,
    WEIGHT_WORDS,
    calls_copy,
    dtype_view_of,
    is_allocation,
    is_container,
    refills,
    shape_free_chains,
    weight_named,
)
from derivgraph.audit.static.vocab import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    SCALAR_BUILTINS,
    SCALAR_METHODS,
    looks_like_tensor_attr,
)
from derivgraph.audit.static.walk import walk
from derivgraph.spec.kinds import TensorKind

__all__ = ["StoreRules"]


_NOT_TENSOR_CALLS = frozenset({
    "getattr", "get", "pop", "setdefault", "tuple", "list", "dict", "set", "sorted", "str",
    "repr", "dumps", "compile", "deepcopy", "copy", "partial", "len", "id", "type", "vars"})
"""Calls whose result is no tensor, whatever they are handed."""
_TENSOR_NAMED = re.compile(r"weight|scale|bias|packed|w13|w1_|w2_|_w\d|qzeros|g_idx|sf\b|_sf_")
_NOT_TENSOR_NAMED = re.compile(r"config|_str$|name|size|shape|dtype|_fn$|kernel$|module")


class StoreRules:
    """Attribute stores and container items: which category a stored value falls in."""

    if TYPE_CHECKING:
        inf: TensorInference
        imports: dict[str, str]
        holders: dict[str, list[str]]
        scope: ModuleScope
        reached: Reached
        lineage: tuple[str, ...]
        guards: list[str]
        defs: dict[str, ast.expr]
        nested_defs: dict[str, ast.AST]
        history: dict[str, list[ast.expr]]
        closures: dict[str, list[str]]
        stored_locals: dict[str, str]
        call_locals: dict[str, ast.Call]
        filled: dict[str, TensorInfo]
        copy_calls: dict[int, str]
        tensor_containers: set[str]
        params: set[str]
        property_chains: dict[str, str]
        scalar_locals: dict[str, str]
        backing: dict[str, list[int]]
        containers: frozenset[str]
        scalar_functions: frozenset[str]
        _copies: bool | None

        def _emit(self, stmt: ast.stmt, attr: str, owner: str, category: CategoryId, reason: str,
                  value: ast.expr, kind: TensorKind, alias_of: str | None = None,
                  line: int | None = None, col: int | None = None,
                  persistent: bool = True, view_of_kept: bool = False,
                  refilled: bool = False, derives: str | None = None) -> None: ...

        def _weight_of(self, value: ast.expr) -> str | None: ...

        def _targets(self, chain: str) -> list[tuple[str, str]]: ...

        def _getattr_info(self, call: ast.Call) -> TensorInfo | None: ...

        def _captures_tensor(self, name: str) -> bool: ...

    # ---- attributes ----------------------------------------------------------------------------

    def _store(self, target: ast.Attribute, value: ast.expr, stmt: ast.stmt) -> None:
        owner = attr_chain(target.value)
        if owner is None or owner.split(".")[0] in self.imports:
            return
        if target.attr == "data":
            if dtype_view_of(value, owner, self.imports):
                return  # x.data = x.data.view(torch.<dtype>): the same storage, reinterpreted
            for base, attr in self._targets(owner):
                self._emit(stmt, attr, base, CategoryId.DATA_REBIND,
                           f"`{owner}.data` is rebound to {short(value)}", value,
                           TensorKind.PARAMETER)
            return
        self._classify_store(target, owner, target.attr, value, stmt)

    def _classify_store(self, target: ast.expr | None, owner: str, attr: str, value: ast.expr,
                        stmt: ast.stmt) -> None:
        if isinstance(value, ast.Constant):
            return
        value = self._through_property(value)
        scalar = self._scalar_reason(value)
        if scalar is None and isinstance(value, ast.Name) and value.id in self.scalar_locals:
            scalar = f"{self.scalar_locals[value.id]} (through local {value.id})"
        if scalar:
            if f"{owner}.{attr}" in self.guards:  # a host scalar taken once, on first use
                self._emit(stmt, attr, owner, CategoryId.LAZY_CACHE,
                           f"built once behind `if {owner}.{attr} is None`: {scalar}", value,
                           TensorKind.SCALAR)
                return
            self._emit(stmt, attr, owner, CategoryId.HOST_SCALAR, scalar, value, TensorKind.SCALAR)
            return
        captured = self._captured_reason(value)
        if captured:
            self._emit(stmt, attr, owner, CategoryId.CAPTURED_TENSOR, captured, value,
                       TensorKind.ATTRIBUTE)
            return
        info = self.inf.infer(value)
        if info is None and isinstance(value, ast.Call) and is_getattr(value):
            info = self._getattr_info(value)
        if info is None and isinstance(value, (ast.Dict, ast.DictComp)):
            info = self._dict_info(value)
        if info is None and isinstance(value, ast.Call):
            info = (self._dataclass_info(value) or self._returned_container_info(value)
                    or self._helper_info(value, attr) or self._copies_info(value)
                    or self._wrapper_info(value, lazy=f"{owner}.{attr}" in self.guards))
        if info is None and isinstance(value, ast.Name) and value.id in self.filled:
            info = self.filled[value.id]  # a local container filled with tensors
        if info is None and isinstance(value, ast.Name) and value.id in self.call_locals:
            info = self._helper_info(self.call_locals[value.id], attr)  # kept through a local
        if info is None and f"{owner}.{attr}" in self.guards:
            info = self._refilled_copy_info(value, f"{owner}.{attr}")
        if info is None:
            return
        self._emit_store(target, value, info, stmt, owner=owner, attr=attr)

    def _through_property(self, value: ast.expr) -> ast.expr:
        """``self.p`` where ``p`` is a property of the lineage returning ``self.obj.field``
        (``a2_gscale`` -> ``self.quant_config.a2_gscale``, any file): the field it reads, so
        the store is judged as a reference into that object, not a second name on ``self``."""
        if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                and value.value.id == "self" and value.attr in self.property_chains):
            return value
        resolved = ast.parse(f"self.{self.property_chains[value.attr]}", mode="eval").body
        for node in walk(resolved):
            ast.copy_location(node, value)
        return resolved

    def _wrapper_info(self, call: ast.Call, lazy: bool = False) -> TensorInfo | None:
        """An object built around a tensor computed from weights in the call itself
        (``make_config(a1_gscale=1.0 / layer.a1_scale)``): a container of a new tensor. Built
        once behind a lazy guard, views of kept tensors (``w.view(torch.uint8)``) are no new
        tensors: the container then holds views the reload refills in place."""
        if is_allocation(call):
            return None
        views = None
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            info = self.inf.infer(arg)
            if (info is not None and info.fresh and not info.param and not isinstance(arg, ast.Name)
                    and self._from_weights(arg) and shape_free_chains(arg)):
                if lazy and info.view and info.of_kept:
                    views = views or arg
                    continue
                return TensorInfo(why=f"a container (a wrapper object) built around a new tensor "
                                  f"({short(arg, 60)})")
        if views is not None:
            return TensorInfo(why=f"a container of references and views of kept tensors "
                              f"({short(views, 60)})", view=True, of_kept=True)
        return None

    def _refilled_copy_info(self, value: ast.expr, path: str) -> TensorInfo | None:
        """``src.to(torch.float32)`` (or ``.float()``, ``.clone()``...) made once behind a guard
        on ``path``, where the step refills ``path.copy_(src)``: the refill shows ``src`` is a
        tensor, whatever its name says."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in COPY_METHODS):
            return None
        source = ast.dump(value.func.value)
        for node in walk(self.reached.func):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "copy_" and attr_chain(node.func.value) == path
                    and node.args and ast.dump(node.args[0]) == source):
                return TensorInfo(why=f"a copy of {short(value.func.value, 40)} "
                                  f"(.{value.func.attr}())")
        return None

    def _helper_info(self, call: ast.Call, attr: str) -> TensorInfo | None:
        """A helper the audit cannot read (another file, no annotation; a library call) handed
        weights and stored under a weight-like name (``layer._packed_weight = pack(layer.weight)``):
        judged a new tensor derived from those weights."""
        if not _TENSOR_NAMED.search(attr) or _NOT_TENSOR_NAMED.search(attr):
            return None
        last = self._opaque_call_on_weights(call, lambda a: bool(shape_free_chains(a)))
        return TensorInfo(why=f"returned by {last}() from weight arguments") if last else None

    def _opaque_call_on_weights(self, call: ast.Call,
                                tensor_arg: Callable[[ast.expr], bool]) -> str | None:
        """The callee's name when ``call`` is a function the audit cannot read (not a class,
        not an allocation, not a known non-tensor call) handed an argument that reads weights
        and passes ``tensor_arg``; else None."""
        name = call_name(call.func, self.imports) or ""
        last = name.rsplit(".", 1)[-1]
        if (not last or last[:1].isupper() or is_allocation(call) or last in _NOT_TENSOR_CALLS
                or name.startswith("json.")):
            return None
        args = [*call.args, *(k.value for k in call.keywords)]
        return last if any(self._from_weights(a) and tensor_arg(a) for a in args) else None

    def _weight_handle(self, call: ast.Call) -> str | None:
        """The callee when ``call`` is a library or op call (``ops.create_onednn_mm(w.t(), 32)``)
        handed a weight itself, not only its shape, dtype or size: the handle it returns may
        keep its own copy of the weight (a prepacked oneDNN matrix)."""
        if (attr_chain(call.func) or "").split(".")[0] not in self.imports:
            return None  # a method of this object or a local helper: read by the other rules
        return self._opaque_call_on_weights(call, lambda a: not any(
            isinstance(n, ast.Attribute) and n.attr in NON_TENSOR_ATTRS
            or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in NON_TENSOR_METHODS for n in walk(a)))

    def _dict_info(self, value: ast.Dict | ast.DictComp) -> TensorInfo | None:
        if isinstance(value, ast.DictComp):
            scope = self.inf.fork()
            for gen in value.generators:
                if scope.infer(gen.iter) and isinstance(gen.target, ast.Name):
                    scope.locals[gen.target.id] = TensorInfo(why="element", fresh=False)
            inner = scope.infer(value.value)
            infos = [inner] if inner else []
        else:
            infos = [i for i in (self.inf.infer(v) for v in value.values if v is not None) if i]
        if not infos:
            return None
        return TensorInfo(why=f"a container of tensors ({short(value, 40)})",
                          fresh=any(i.fresh for i in infos))

    def _returned_container_info(self, call: ast.Call) -> TensorInfo | None:
        """A call of a method of this class's lineage (``self.make_config(layer)``) or of a
        function, annotated to return a dataclass holding tensors (a quant config of
        descriptors), or returning one it constructs: a new container each run."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and self.reached.cls:
            for cls in (self.reached.cls, *self.lineage):
                kind = self._container_returned(cls, func.attr)
                if kind:
                    return TensorInfo(why=f"a container of tensors ({kind}) returned by "
                                      f"{func.attr}()")
            return None
        qualified = call_name(func, self.imports)
        if qualified is not None and qualified in self.containers and "." in qualified:
            return TensorInfo(why=f"a container of tensors returned by {qualified}()")
        return None

    def _copies_info(self, call: ast.Call) -> TensorInfo | None:
        """``self.helper(...)`` where a method of the lineage (this file) returns a container
        it builds from copies of weights (:func:`.returned_copies.returned_copies`)."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and self.reached.cls):
            return None
        for cls in (self.reached.cls, *self.lineage):
            info = self.scope.classes.get(cls)
            helper = info.methods.get(func.attr) if info else None
            found = returned_copies(helper) if helper is not None else None
            if found is None:
                continue
            self.copy_calls[id(call)] = f"{found.source} (in {func.attr}())"
            keeper = refilled_in_place(owner_attr(found.source), self.scope.text) \
                if found.kept_tuple else None
            if keeper is not None:
                return TensorInfo(why=f"a container ({found.container}) returned by "
                                  f"{func.attr}() of references to `{found.source}`, which "
                                  f"{keeper}() refills in place with copy_", view=True,
                                  of_kept=True)
            return TensorInfo(why=f"a container ({found.container}) holding copies "
                              f"returned by {func.attr}(): {found.argument} from "
                              f"`{found.source}`")
        return None


    def _container_returned(self, cls: str, method: str) -> str | None:
        """The container class ``cls.method`` is annotated to return (any file), or
        constructs in a ``return`` (this file)."""
        if f"{cls}.{method}" in self.containers:
            return f"{cls}.{method}() annotation"
        info = self.scope.classes.get(cls)
        func = info.methods.get(method) if info else None
        for node in walk(func) if func is not None else ():
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                name = call_name(node.value.func, self.imports) or ""
                if name.rsplit(".", 1)[-1] in self.containers:
                    return name.rsplit(".", 1)[-1]
        return None

    def _dataclass_info(self, call: ast.Call) -> TensorInfo | None:
        """A dataclass of the tree with tensor fields, built from tensors."""
        name = call.func.attr if isinstance(call.func, ast.Attribute) else (
            call.func.id if isinstance(call.func, ast.Name) else None)
        built = False  # a classmethod constructor computes its fields (``W.from_ckpt(w)``)
        if (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id in self.containers):
            name, built = call.func.value.id, True
        qualified = call_name(call.func, self.imports)
        local = self.scope.functions.get(name or "") if isinstance(call.func, ast.Name) else None
        returns = set(re.findall(r"\w+", ast.unparse(local.returns))) \
            if local is not None and local.returns is not None else set()
        if name not in self.containers and qualified not in self.containers and \
                not returns & self.containers:
            return None
        infos = [i for i in (self.inf.infer(a) for a in [*call.args,
                                                          *(k.value for k in call.keywords)])
                 if i and not i.param]
        if not infos:
            return None
        return TensorInfo(why=f"a container of tensors ({name}(...))",
                          fresh=built or any(i.fresh for i in infos))

    def _emit_store(self, target: ast.expr | None, value: ast.expr, info: TensorInfo,
                    stmt: ast.stmt, unpacked: bool = False, owner: str | None = None,
                    attr: str | None = None) -> None:
        if owner is None and isinstance(target, ast.Attribute):
            owner = attr_chain(target.value)
        if owner is None or attr is None and not isinstance(target, ast.Attribute):
            return
        attr = attr or target.attr  # type: ignore[union-attr]
        path = f"{owner}.{attr}"
        # an unpacked store is reported where its own target is, not where the statement starts
        at = {"line": target.lineno, "col": target.col_offset} \
            if unpacked and target is not None else {}
        self.inf.stored.add(path)
        if info.param:
            return  # a tensor handed in by the caller: the caller's allocation is the site
        if not info.fresh and info.why.startswith("a container") and info.source is None:
            self._emit(stmt, attr, owner, CategoryId.CONTAINER,
                       f"stores {info.why} (references)", value, TensorKind.ALIAS, **at)
            return
        if not info.fresh:
            source = info.source or self._source_of(value)
            if source is None or source == path:
                return
            if owner_base(source) == owner:
                # a second name for a tensor the object holds (or just stored): the object
                # keeps or rebuilds both together, and the first store is the site
                return
            self._emit(stmt, attr, owner, CategoryId.ALIAS,
                       f"stores a reference to `{source}`", value, TensorKind.ALIAS,
                       alias_of=source, **at)
            return
        if isinstance(value, ast.Name) and value.id in self.stored_locals:
            first = self.stored_locals[value.id]
            self._emit(stmt, attr, owner, CategoryId.ALIAS,
                       f"the same tensor object as `{first}` (both hold local {value.id})", value,
                       TensorKind.ALIAS, alias_of=first, **at)
            return
        if isinstance(value, ast.Name):
            self.stored_locals[value.id] = path
        backs_kept = isinstance(value, ast.Name) and value.id in self.backing
        kind = TensorKind.PARAMETER if info.parameter else (
            TensorKind.VIEW if info.view else TensorKind.ATTRIBUTE)
        what = "a new Parameter" if info.parameter else ("a view" if info.view else "a new tensor")
        why = f"stores {what}: {info.why}"
        if unpacked:
            why += f", unpacked into {path}"
        if info.parameter:
            why += "; replaces the registered Parameter object (and drops its weight_loader)"
        category = CategoryId.TENSOR_ATTR
        refilled = False
        if path in self.guards:
            if self._copies is None:
                self._copies = calls_copy(self.reached.func)
            # made once, then refilled with copy_ (the keep-the-object pattern): right only
            # where post-load code reruns; the refill shows its source is reloaded data
            refilled = bool(self._copies) and refills(self.reached.func, path) \
                and not is_allocation(value)
            if not refilled and not self._from_weights(value):
                return  # a lazily made workspace or constant: no weight values to go stale
            if refilled:
                why = f"made once behind `if {path} is None`, then refilled with " \
                    f"`{path}.copy_(...)` by this step: {why}"
            elif self._copies:
                return  # refilled with copy_ into something else: the keep-the-object pattern
            else:
                category = CategoryId.LAZY_CACHE
                why = f"built once behind `if {path} is None`: {why}"
        elif is_container(value) or info.why.startswith(("a container", "a list")):
            category = CategoryId.CONTAINER
        if backs_kept:
            why += " (tensors kept by the layer were `.set_()` into it: it shares their storage)"
        # a local container filled item by item: its weight is in the items, not its `{}`
        derives = self._filled_weight(value.id) if isinstance(value, ast.Name) \
            and value.id in self.filled else self.copy_calls.get(id(value))
        self._emit(stmt, attr, owner, category, why, value, kind,
                   view_of_kept=(info.view and info.of_kept) or backs_kept, refilled=refilled,
                   derives=derives, **at)

    def _source_of(self, value: ast.expr) -> str | None:
        if isinstance(value, ast.Name):
            info = self.inf.locals.get(value.id)
            return info.source if info else None
        return attr_chain(value)

    # ---- containers ----------------------------------------------------------------------------

    def _container_item(self, target: ast.Subscript, value: ast.expr, stmt: ast.stmt) -> None:
        """``self.cache[k] = tensor``: a tensor put into a container held on an object."""
        chain = attr_chain(target.value)
        if chain is not None and "." not in chain:
            self._fill_local(chain, value)
        if chain is None or "." not in chain or chain.split(".")[0] in self.imports:
            return
        attr = owner_attr(chain)
        if looks_like_tensor_attr(attr) or chain in self.inf.stored or attr in LOADED_NAMES \
                or attr == "data":
            return  # an in-place write into a tensor
        info = self.inf.infer(value)
        if info is None or info.param:
            return
        if not info.fresh and info.source and info.source.split("[")[0] == chain:
            return  # the container's own entry, re-wrapped over the same storage
        self._emit(stmt, attr, owner_base(chain), CategoryId.CONTAINER,
                   f"puts {'a new tensor' if info.fresh else 'a reference'} into "
                   f"`{chain}[...]` ({info.why})", value,
                   TensorKind.ATTRIBUTE if info.fresh else TensorKind.ALIAS)

    def _container_call(self, call: ast.Call, stmt: ast.stmt) -> None:
        """``self.tensors.append(t)`` / ``.extend`` / ``.insert``."""
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr in ("append", "extend", "insert")):
            return
        chain = attr_chain(f.value)
        if chain is not None and "." not in chain and call.args:
            self._fill_local(chain, call.args[-1])
        if chain is None or "." not in chain or chain.split(".")[0] in self.imports:
            return
        value = call.args[-1] if call.args else None
        info = self.inf.infer(value)
        if info is None or info.param or value is None:
            return
        self._emit(stmt, owner_attr(chain), owner_base(chain), CategoryId.CONTAINER,
                   f"`{chain}.{f.attr}(...)` adds {'a new tensor' if info.fresh else 'a reference'}"
                   f" ({info.why})", value,
                   TensorKind.ATTRIBUTE if info.fresh else TensorKind.ALIAS)

    def _fill_local(self, name: str, value: ast.expr) -> None:
        """``tables[k] = <from weights>`` (or ``.append``) into a local container: a tensor (by
        inference, or by the local's ``dict[str, torch.Tensor]`` annotation) read from weights
        makes the local a container of tensors, judged where it is stored."""
        if name in self.imports or name in self.params or name in self.inf.locals:
            return  # a module, an argument, or a tensor written in place
        info = self.inf.infer(value)
        if info is None and name not in self.tensor_containers or info is not None and info.param:
            return
        if not self._from_weights(value):
            return
        fresh = info is None or info.fresh or bool(self.filled.get(name, info).fresh)
        self.filled[name] = TensorInfo(why=f"a container of tensors filled with "
                                       f"{short(value, 50)}", fresh=fresh)
        self.history.setdefault(name, []).append(value)
        self.defs.setdefault(name, value)

    def _filled_weight(self, name: str) -> str | None:
        """The weight a filled local container derives from: what its items' calls are handed
        (``tables.get(device, n, layer._k_scale_float)``) before their receivers."""
        items = self.history.get(name, [])
        handed = [a for v in items if isinstance(v, ast.Call)
                  for a in [*v.args, *(k.value for k in v.keywords)]]
        return next((w for v in [*handed, *items] if (w := self._weight_of(v))), None)

    # ---- value shapes --------------------------------------------------------------------------

    def _scalar_reason(self, value: ast.expr) -> str | None:
        for node in walk_no_lambda(value):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in SCALAR_METHODS and not node.args:
                return f"a Python scalar from `{short(node)}`"
            if (isinstance(f, ast.Name) and f.id in SCALAR_BUILTINS and len(node.args) == 1
                    and self.inf.infer(node.args[0]) is not None):
                return f"a Python scalar from `{short(node)}` of a tensor"
            if self._scalar_helper(node):
                return f"a Python scalar returned by `{short(node)}` from a tensor"
        return None

    def _scalar_helper(self, call: ast.Call) -> bool:
        """A helper annotated ``-> float``/``-> int`` (in this file or any scanned one) that is
        handed a tensor."""
        name = call_name(call.func, self.imports)
        local = self.scope.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        annotated = (local is not None and local.returns is not None
                     and ast.unparse(local.returns) in ("float", "int")) or (
            name is not None and name in self.scalar_functions)
        if not annotated:
            return False
        args = [*call.args, *(k.value for k in call.keywords)]
        return any(self.inf.infer(a) is not None for a in args)

    def _weight_free(self, value: ast.expr) -> bool:
        """Whether a value reads only names of weight-free data (rotary caches, routing maps,
        pointer tables) and nothing named like a weight, directly or through earlier locals."""
        names: list[str] = []
        nodes = [value]
        for n in walk(value):
            if isinstance(n, ast.Name) and n.id in self.defs:
                nodes.append(self.defs[n.id])
        for node in nodes:
            names += [n.attr if isinstance(n, ast.Attribute) else n.id for n in walk(node)
                      if isinstance(n, (ast.Attribute, ast.Name))]
        names = [n for n in names if n not in ("self", "layer", "torch")]
        return any(WEIGHT_FREE_RE.search(n) for n in names) and not any(
            weight_named(n) for n in names)

    def _from_weights(self, value: ast.expr) -> bool:
        """Whether a value reads weights: an attribute named like a weight, directly or through a
        local defined earlier."""
        if id(value) in self.copy_calls:
            return True  # a helper's container of weight copies
        if is_allocation(value) or (is_container(value) and all(
                is_allocation(e) for e in getattr(value, "elts", [None]))):
            return False  # zeros/empty/full take only shapes, dtypes and devices from weights
        names: list[str] = []
        nodes = [value]
        seen: set[str] = set()
        for node in nodes:  # grows: the definitions of the locals it reads, transitively
            for n in walk(node):
                if not isinstance(n, ast.Name) or n.id in seen:
                    continue
                seen.add(n.id)
                if n.id in self.defs:
                    nodes += self.history.get(n.id, [self.defs[n.id]])
                elif n.id in self.nested_defs:
                    nodes.append(self.nested_defs[n.id])  # a nested helper: what it reads
        for node in nodes:
            names += [n.attr for n in walk(node) if isinstance(n, ast.Attribute)
                      and (attr_chain(n) or ".").split(".")[0] not in self.imports]
        return any(looks_like_tensor_attr(a) or any(w in a for w in WEIGHT_WORDS) for a in names)

    def _captured_reason(self, value: ast.expr) -> str | None:
        if isinstance(value, ast.Call):
            name = call_name(value.func, self.imports)
            if name in ("functools.partial", "partial"):
                captured = [a for a in [*value.args[1:], *(k.value for k in value.keywords)]
                            if self.inf.infer(a) is not None
                            or isinstance(a, ast.Name) and self._captures_tensor(a.id)]
                if captured:
                    names = ", ".join(short(a, 30) for a in captured)
                    return f"functools.partial captures tensor(s) {names}"
            return None
        if isinstance(value, ast.Lambda):
            captured = sorted(n for n in free_names(value) if self._captures_tensor(n))
            handles = [n for n in captured if n not in self.inf.locals]
            if handles:
                made = ", ".join(f"{n} (a handle {self._weight_handle(self.call_locals[n])}() "
                                 f"made from weights)" for n in handles)
                return f"a lambda captures {made}"
            if captured:
                return f"a lambda captures tensor local(s) {', '.join(captured)}"
        if isinstance(value, ast.Name) and value.id in self.closures:
            return (f"nested function {value.id}() captures tensor local(s) "
                    f"{', '.join(self.closures[value.id])}")
        return None
