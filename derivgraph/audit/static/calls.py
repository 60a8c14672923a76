"""Call-site rules of the static audit: register_*, replace_parameter, ``.set_()``, setattr.

A mixin of :class:`.rules.FunctionAudit`: it reads the auditor's locals (tensor
inference, the attributes locals hold, loops over literal names) and emits through its
``_emit``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from derivgraph.audit.static.ast import const_str, kwarg, owner_base, short
from derivgraph.audit.static.infer import TensorInference, attr_chain
from derivgraph.audit.static.sites import CategoryId
from derivgraph.spec.kinds import TensorKind

__all__ = ["CallRules"]


class CallRules:
    """register_buffer/register_parameter, replace_parameter, ``.set_()`` and setattr."""

    if TYPE_CHECKING:
        inf: TensorInference
        imports: dict[str, str]
        holders: dict[str, list[str]]
        loop_strings: dict[str, list[str]]
        backing: dict[str, list[int]]
        sites: list
        index: object

        def _emit(self, stmt: ast.stmt, attr: str, owner: str, category: CategoryId, reason: str,
                  value: ast.expr, kind: TensorKind, alias_of: str | None = None,
                  line: int | None = None, col: int | None = None,
                  persistent: bool = True, view_of_kept: bool = False) -> None: ...

        def _classify_store(self, target: ast.expr | None, owner: str, attr: str,
                            value: ast.expr, stmt: ast.stmt) -> None: ...

        def _targets(self, chain: str) -> list[tuple[str, str]]: ...

        def _handoffs(self, stmt: ast.stmt) -> None: ...

    # ---- calls ----------------------------------

    def _calls(self, stmt: ast.stmt) -> None:
        self._handoffs(stmt)  # new tensors handed to a constructor (:mod:`.handoff`)
        for node in self.index.site_calls.get(id(stmt), ()):
            f = node.func
            if isinstance(f, ast.Attribute):
                if f.attr in ("register_buffer", "register_parameter"):
                    self._register(node, f, stmt)
                elif f.attr == "set_":
                    self._set_storage(node, f, stmt)
                elif f.attr == "replace_parameter":
                    self._replace(node, stmt)
            elif isinstance(f, ast.Name):
                if f.id == "setattr" and len(node.args) == 3:
                    self._setattr(node, stmt)
                elif f.id == "replace_parameter":
                    self._replace(node, stmt)

    def _register(self, node: ast.Call, f: ast.Attribute, stmt: ast.stmt) -> None:
        value = node.args[1] if len(node.args) > 1 else kwarg(node, "tensor", "param")
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return
        owner = attr_chain(f.value) or short(f.value)
        kind = TensorKind.BUFFER if f.attr == "register_buffer" else TensorKind.PARAMETER
        held = self.holders.get(value.id, []) if isinstance(value, ast.Name) else (
            [c] if (c := attr_chain(value)) else [])
        if held and all(owner_base(c) == owner for c in held):
            return  # a tensor of the same module under a new name (a rename): nothing new
        info = self.inf.infer(value)
        # `layer.k_scale.detach()`: a new object over the storage of a tensor the layer keeps
        shares = info is not None and not info.fresh and bool(info.source) and \
            owner_base(info.source or "") == owner
        flag = kwarg(node, "persistent") or (node.args[2] if len(node.args) > 2 else None)
        persistent = not (isinstance(flag, ast.Constant) and flag.value is False)
        note = "" if persistent else ", persistent=False"
        for attr in self._names(node.args[0] if node.args else kwarg(node, "name")):
            self.inf.stored.add(f"{owner}.{attr}")
            self._emit(stmt, attr, owner, CategoryId.REGISTER,
                       f"{f.attr}({attr!r}, {short(value, 40)}{note}) in post-load code", value,
                       kind, line=node.lineno, col=node.col_offset, persistent=persistent,
                       view_of_kept=shares)

    def _set_storage(self, node: ast.Call, f: ast.Attribute, stmt: ast.stmt) -> None:
        chain = attr_chain(f.value)
        if chain is None:
            return
        value = node.args[0] if node.args else f.value
        storage = value.value if isinstance(value, ast.Subscript) else value
        first = len(self.sites)
        for base, attr in self._targets(chain):
            self._emit(stmt, attr, base, CategoryId.SET_STORAGE,
                       f"`{chain}.set_({short(value, 40) if node.args else ''})` swaps its "
                       "storage", value, TensorKind.VIEW, line=node.lineno, col=node.col_offset)
        if node.args and isinstance(storage, ast.Name):  # kept tensors now live in the local
            self.backing.setdefault(storage.id, []).extend(range(first, len(self.sites)))

    def _replace(self, node: ast.Call, stmt: ast.stmt) -> None:
        if len(node.args) < 3:
            return
        value = node.args[2]
        info = self.inf.infer(value)
        layout = set(info.layout) if info else set()
        if not layout:
            return
        owner = attr_chain(node.args[0]) or short(node.args[0])
        ops = ", ".join(sorted(layout))
        for attr in self._names(node.args[1]):
            self._emit(stmt, attr, owner, CategoryId.REPLACE_LAYOUT,
                       f"replace_parameter({attr!r}) with a value whose layout may differ "
                       f"(after {ops})", value, TensorKind.PARAMETER, line=node.lineno,
                       col=node.col_offset)

    def _setattr(self, node: ast.Call, stmt: ast.stmt) -> None:
        owner = attr_chain(node.args[0])
        if owner is None or owner.split(".")[0] in self.imports:
            return
        for attr in self._names(node.args[1]):
            self._classify_store(None, owner, attr, node.args[2], stmt)

    def _names(self, node: ast.expr | None) -> list[str]:
        """Attribute names a name argument can take: a constant, or a loop over constants."""
        if node is None:
            return ["<dynamic>"]
        text = const_str(node)
        if text is not None:
            return [text]
        if isinstance(node, ast.Name) and node.id in self.loop_strings:
            return list(self.loop_strings[node.id])
        if isinstance(node, ast.JoinedStr):
            loops = {v.value.id for v in node.values if isinstance(v, ast.FormattedValue)
                     and isinstance(v.value, ast.Name) and v.value.id in self.loop_strings}
            if len(loops) == 1 and all(isinstance(v, ast.Constant) or (
                    isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
                    and v.value.id in loops and v.conversion == -1 and v.format_spec is None)
                    for v in node.values):
                (var,) = loops
                return ["".join(str(v.value) if isinstance(v, ast.Constant) else s
                                for v in node.values) for s in self.loop_strings[var]]
        return [f"<{short(node, 40)}>"]

