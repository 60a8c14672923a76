"""Load specs from YAML (with file and line on every element and error), Python and plugins.

Sources of specs, merged by :func:`default_specs`:

* the built-in library (``specs/*.yaml``, shipped in the wheel as ``derivgraph.spec_library``);
* the ``derivgraph.specs`` entry-point group: each entry point names a YAML file or folder, a
  ``Spec``/``SpecFile``/list of them, or a zero-argument callable returning one of those.
"""

from __future__ import annotations

import importlib.resources
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from derivgraph.errors import Rule, SourceLocation, SpecIssue, SpecValidationError
from derivgraph.limits import LIMITS, LimitError, check_entry_count
from derivgraph.spec.model import Spec, SpecFile

__all__ = [
    "ENTRY_POINT_GROUP",
    "builtin_specs",
    "default_specs",
    "load_spec_file",
    "load_spec_text",
    "load_specs",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "derivgraph.specs"

_Lines = dict[tuple[Any, ...], int]

# The only YAML tags a spec may carry: plain mappings, lists and scalars (no !!python/...).
_SAFE_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in (
    "map", "seq", "str", "int", "float", "bool", "null", "timestamp"))


# libyaml when present: its parser is iterative and about 40x faster than the pure-Python one.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BRACKETS = re.compile(r"[\[\]{}]")


def _check_flow_depth(text: str, file: str) -> None:
    """Refuse deeply nested flow collections before the YAML parser sees them."""
    depth = 0
    for m in _BRACKETS.finditer(text):
        depth += 1 if m.group() in "[{" else -1
        if depth > LIMITS.max_yaml_depth:
            line = text.count("\n", 0, m.start()) + 1
            raise SpecValidationError([SpecIssue(
                Rule.SCHEMA, f"the YAML nests more than {LIMITS.max_yaml_depth} levels deep",
                "flatten the document", SourceLocation(file, line))])


def _refuse(message: str, fix: str, file: str, node: yaml.Node | None) -> SpecValidationError:
    line = node.start_mark.line + 1 if node is not None else 0
    return SpecValidationError([SpecIssue(Rule.SCHEMA, message, fix, SourceLocation(file, line))])


def _constructor(budget: list[Any]) -> yaml.SafeLoader:
    """One scalar constructor per document (kept in the budget list; building one is slow)."""
    if len(budget) == 1:
        budget.append(yaml.SafeLoader(""))
    return budget[1]


def _plain(node: yaml.Node, path: tuple[Any, ...], lines: _Lines, file: str,
           budget: list[Any] | None = None) -> Any:
    """Turn a composed YAML node into Python data, recording the line of every element.

    Aliases are expanded against a node budget (``LIMITS.max_yaml_nodes``): a billion-laughs
    document is refused as DG001 after that many nodes, not after exhausting memory.
    """
    budget = [LIMITS.max_yaml_nodes] if budget is None else budget
    constructor = _constructor(budget)
    budget[0] -= 1
    if budget[0] < 0:
        raise _refuse(f"the YAML expands to more than {LIMITS.max_yaml_nodes} nodes (aliases "
                      "that reference aliases?)", "write the specs out without nested YAML "
                      "aliases", file, node)
    if node.tag not in _SAFE_TAGS:
        raise _refuse(f"YAML tag {node.tag!r} is not allowed in a spec",
                      "remove the tag: specs hold plain mappings, lists, strings and numbers",
                      file, node)
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _plain(key_node, (*path, "<key>"), lines, file, budget)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise _refuse(f"a mapping key must be a string or a number, not "
                              f"{type(key).__name__}", "use plain keys", file, key_node)
            if key in out:
                raise SpecValidationError([SpecIssue(
                    Rule.DUPLICATE, f"key {key!r} appears twice in one mapping",
                    "remove one of the two entries",
                    SourceLocation(file, key_node.start_mark.line + 1),
                )])
            out[key] = _plain(value_node, (*path, key), lines, file, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, (*path, i), lines, file, budget) for i, v in enumerate(node.value)]
    return constructor.construct_object(node, deep=True)


def _line_for(loc: tuple[Any, ...], lines: _Lines) -> int:
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return 0


def load_spec_text(text: str, file: str = "<string>") -> list[Spec]:
    """Parse one YAML document of specs; every error carries ``file:line``.

    Bounded (:mod:`derivgraph.limits`): the text's size, alias expansion and nesting; YAML
    tags other than plain mappings, lists and scalars are refused.
    """
    if len(text) > LIMITS.max_file_bytes:
        raise SpecValidationError([SpecIssue(
            Rule.RESOURCE_LIMIT, f"the spec text is {len(text)} characters long (limit "
            f"{LIMITS.max_file_bytes})", "split the specs over several files",
            SourceLocation(file, 1))])
    _check_flow_depth(text, file)
    try:
        _check_entry_count(text, file)  # on the event stream: before any node is built
        root = yaml.compose(text, Loader=_LOADER)
    except RecursionError:
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, "the YAML is nested too deeply to read", "flatten the document",
            SourceLocation(file, 1))]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, f"not valid YAML: {getattr(exc, 'problem', exc)}",
            "fix the YAML syntax (indentation, quoting of ':' and '#' inside formulas)",
            SourceLocation(file, line),
        )]) from None
    if root is None:
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, "the file is empty", "write `version: 1` and a `specs:` list",
            SourceLocation(file, 1),
        )])
    lines: _Lines = {}
    try:
        data = _plain(root, (), lines, file)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, f"not valid YAML: {getattr(exc, 'problem', exc)}",
            "use plain YAML values (strings, numbers, true/false, null)",
            SourceLocation(file, mark.line + 1 if mark else 0))]) from None
    except RecursionError:
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, "the YAML is nested too deeply to read", "flatten the document",
            SourceLocation(file, 1))]) from None
    try:
        parsed = SpecFile.model_validate(data)
    except ValidationError as exc:
        issues = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc) or "<document>"
            issues.append(SpecIssue(
                Rule.SCHEMA, f"{where}: {err['msg']}",
                _schema_fix(err), SourceLocation(file, _line_for(loc, lines)),
            ))
        raise SpecValidationError(issues) from None
    for i, spec in enumerate(parsed.specs):
        spec._location = SourceLocation(file, lines.get(("specs", i), 0))
        spec.target._location = SourceLocation(file, lines.get(("specs", i, "target"), 0))
        for j, derived in enumerate(spec.derived):
            derived._location = SourceLocation(file, lines.get(("specs", i, "derived", j), 0))
    return parsed.specs


@dataclass
class _Frame:
    """An open YAML collection while :func:`_check_entry_count` reads the event stream."""

    role: str  # "root", "specs", "spec", "derived" or "" (anything else)
    mapping: bool
    key: str | None = None  # the key whose value comes next (mappings)
    at_key: bool = True  # a mapping's next node is a key


def derived_entry_count(text: str) -> tuple[int, int]:
    """The number of derived entries in a spec document and the line of its ``specs:`` list,
    read from the YAML event stream (no node or Python object of the document is built)."""
    stack: list[_Frame] = []
    count, specs_line = 0, 1
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            if stack and stack[-1].mapping:
                stack[-1].at_key = not stack[-1].at_key
            continue
        if not isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent,
                                  yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            continue
        parent = stack[-1] if stack else None
        is_key = parent is not None and parent.mapping and parent.at_key
        label = parent.key if parent is not None and parent.mapping and not is_key else None
        if parent is not None and parent.role == "derived":
            count += 1
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            mapping = isinstance(event, yaml.MappingStartEvent)
            role = ""
            if parent is None and mapping:
                role = "root"
            elif parent is not None and not is_key:
                if parent.role == "root" and label == "specs" and not mapping:
                    role, specs_line = "specs", event.start_mark.line + 1
                elif parent.role == "specs" and mapping:
                    role = "spec"
                elif parent.role == "spec" and label == "derived" and not mapping:
                    role = "derived"
            stack.append(_Frame(role, mapping))
            continue
        if parent is not None and parent.mapping:
            if is_key:
                parent.key = event.value if isinstance(event, yaml.ScalarEvent) else None
            parent.at_key = not parent.at_key
    return count, specs_line


def _check_entry_count(text: str, file: str) -> None:
    """Refuse a file of more derived entries than ``LIMITS.max_derived_per_file`` (DG016),
    before the document is composed: a huge file costs one parse."""
    count, specs_line = derived_entry_count(text)
    try:
        check_entry_count(count)
    except LimitError as exc:
        raise SpecValidationError([SpecIssue(exc.rule, exc.message, exc.fix,
                                             SourceLocation(file, specs_line))]) from None


def _schema_fix(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "remove the unknown key (run `derivgraph schema` for the allowed keys)"
    if kind == "missing":
        return "add the missing key"
    if kind in ("literal_error", "enum"):
        return "use one of the allowed values listed above"
    return "correct the value as the message says (see `derivgraph schema`)"


def read_spec_bytes(data: bytes, file: str) -> str:
    """Decode a spec file: UTF-8 only, bounded in size; DG001/DG016 errors with the line."""
    if len(data) > LIMITS.max_file_bytes:
        raise SpecValidationError([SpecIssue(
            Rule.RESOURCE_LIMIT, f"the file is {len(data)} bytes (limit {LIMITS.max_file_bytes})",
            "split the specs over several files", SourceLocation(file, 1))])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, f"the file is not UTF-8 (byte {data[exc.start]:#04x} at offset "
            f"{exc.start})", "save the file as UTF-8", SourceLocation(file, line))]) from None


def load_spec_file(path: str | Path) -> list[Spec]:
    """Load one YAML spec file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecValidationError([SpecIssue(
            Rule.SCHEMA, f"cannot read the file: {exc.strerror or exc}",
            "check the path", SourceLocation(str(path), 0))]) from None
    return load_spec_text(read_spec_bytes(data, str(path)), str(path))


def load_specs(paths: Iterable[str | Path]) -> list[Spec]:
    """Load YAML files and folders (``*.yaml``/``*.yml``, sorted), collecting every error."""
    specs: list[Spec] = []
    issues: list[SpecIssue] = []
    for entry in paths:
        entry = Path(entry)
        files = sorted([*entry.glob("*.yaml"), *entry.glob("*.yml")]) if entry.is_dir() else [entry]
        for file in files:
            try:
                specs.extend(load_spec_file(file))
            except SpecValidationError as exc:
                issues.extend(exc.issues)
    if issues:
        raise SpecValidationError(issues)
    return specs


def builtin_specs() -> list[Spec]:
    """The spec library shipped with derivgraph."""
    root = importlib.resources.files("derivgraph.spec_library")
    specs: list[Spec] = []
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith((".yaml", ".yml")):
            specs.extend(load_spec_text(item.read_text(encoding="utf-8"), f"specs/{item.name}"))
    return specs


def _coerce(value: Any, origin: str) -> list[Spec]:
    if callable(value) and not isinstance(value, (Spec, SpecFile)):
        value = value()
    if isinstance(value, (str, Path)):
        return load_specs([value])
    if isinstance(value, Spec):
        return [value]
    if isinstance(value, SpecFile):
        return list(value.specs)
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _coerce(v, origin)]
    raise TypeError(
        f"entry point {origin} gave {type(value).__name__}; it must give a YAML path, a Spec, a "
        "SpecFile, a list of those, or a callable returning one"
    )


def plugin_specs() -> list[Spec]:
    """Specs contributed by installed packages through the ``derivgraph.specs`` group."""
    specs: list[Spec] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        logger.debug("loading specs from entry point %s = %s", ep.name, ep.value)
        specs.extend(_coerce(ep.load(), f"{ep.name} = {ep.value}"))
    return specs


def default_specs() -> list[Spec]:
    """Built-in specs plus every installed plugin's specs."""
    return [*builtin_specs(), *plugin_specs()]
