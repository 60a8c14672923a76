"""Write a :class:`Draft` as a spec file of our YAML, with what was not expressed as comments."""

from __future__ import annotations

import json

from derivgraph.trace.draft import Draft, DraftEntry, DraftSpec

__all__ = ["render_yaml"]


def _q(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def _entry(e: DraftEntry) -> str:
    parts = [f"name: {e.name}"]
    if e.owner:
        parts.append(f"owner: {e.owner}")
    parts.append(f"kind: {e.kind}")
    if e.of is not None:
        parts.append(f"of: {_q(e.of)}")
    if e.formula is not None:
        parts.append(f"formula: {_q(e.formula)}")
    if e.persistent:
        parts.append("persistent: true")
    return "      - {" + ", ".join(parts) + "}"


def _spec(s: DraftSpec) -> list[str]:
    lines = [f"  - name: {s.name}",
             f"    description: {_q(f'Traced from {len(s.instances)} instance(s): ' + ', '.join(p or '<model>' for p in s.instances[:6]))}",  # noqa: E501
             "    target:",
             f"      module_class: [{s.module_class}]"]
    if s.quant_method_class:
        lines.append(f"      quant_method_class: [{s.quant_method_class}]")
    for note in s.notes:
        lines.insert(1, f"    # note: {note}")
    if s.params:
        lines.append("    params:")
        lines += [f"      {k}: {_q(v)}" for k, v in s.params.items()]
    lines.append("    derived:")
    lines += [_entry(e) for e in s.entries]
    return lines


def render_yaml(draft: Draft, origin: str) -> str:
    """The draft as YAML text; the header names ``origin`` and lists what was left out."""
    lines = [f"# Drafted by `derivgraph trace` from {origin}.",
             "# Review it: names, owners and kinds come from where the step stored each tensor,",
             "# formulas from the ops it ran (integers named after shapes may need a rename)."]
    if draft.unexpressed:
        lines.append("#")
        lines.append("# Not expressible (engine-computed: declare by hand or register an op):")
        lines += [f"#   - {u.path}: {u.reason}" for u in draft.unexpressed]
    if draft.opaque_ops:
        lines.append("# Ops to register with derivgraph.register_op: "
                     + ", ".join(draft.opaque_ops))
    if draft.sources_replaced:
        lines.append("# Sources replaced by the step (kernel format; the checkpoint tensor is "
                     "gone):")
        lines += [f"#   - {p}" for p in draft.sources_replaced]
    for note in draft.notes:
        lines.append(f"# note: {note}")
    for caveat in draft.caveats:
        lines.append(f"# CAVEAT: {caveat}")
    lines += ["version: 1", "specs:" if draft.specs else "specs: []"]
    for spec in draft.specs:
        lines += _spec(spec)
    return "\n".join(lines) + "\n"
