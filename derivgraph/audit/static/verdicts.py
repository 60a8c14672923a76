"""Verdicts of the executable audit on static findings: the hook between the two audits.

The static audit only reads source; ``derivgraph audit vllm`` (the executable audit) builds vLLM
classes on CPU, reloads them with two sets of weights and observes what moved or went stale. It
hands its results back as a mapping and :func:`apply_verdicts` stamps them on the findings.

**Contract.**

* A finding's key is ``(class, attribute)``: :attr:`StaticFinding.key` gives
  ``(qualified class name, attr)`` (``"vllm.model_executor.layers.quantization.fp8.Fp8MoEMethod",
  "w13_weight_scale"``), where the class is the one whose code makes the store (the quant method
  writing ``layer.x`` is the key's class, not the layer); a store outside any class uses the
  function's qualified name instead.
* The executable audit's mapping is keyed by ``(class qualified name or class short name,
  attribute)``; a qualified key wins over a short one. Values are :class:`Verdict` members:
  ``confirmed`` (moved or stale observed after a real reload), ``refuted`` (kept and fresh), or
  ``not_runnable`` (the class could not be built on CPU). A finding no key names keeps
  ``unchecked``.
* :func:`apply_verdicts` never changes anything else in a finding and never drops one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from derivgraph.audit.static.finding import StaticFinding, Verdict

__all__ = ["Verdict", "apply_verdicts", "verdicts_from_json"]


def apply_verdicts(findings: Iterable[StaticFinding],
                   verdicts: Mapping[tuple[str, str], Verdict]) -> list[StaticFinding]:
    """The findings with ``verdict`` set from ``verdicts`` (see the module docstring)."""
    out = []
    for f in findings:
        qualified, attr = f.key
        short = qualified.rsplit(".", 1)[-1]
        verdict = verdicts.get((qualified, attr)) or verdicts.get((short, attr))
        if verdict is not None and not isinstance(verdict, Verdict):
            raise TypeError(f"verdict for {(qualified, attr)} is {verdict!r}, not a Verdict")
        out.append(dataclasses.replace(f, verdict=verdict) if verdict else f)
    return out


def verdicts_from_json(data: Mapping[str, Any]) -> dict[tuple[str, str], Verdict]:
    """The verdict mapping from ``derivgraph audit vllm --json`` output (its ``verdicts``)."""
    return {(row["class"], row["attribute"]): Verdict(row["verdict"])
            for row in data.get("verdicts", [])}
