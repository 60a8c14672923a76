"""derivgraph inside vLLM 0.33.0's load and reload paths.

* :mod:`~vllm_integration.plugin` — the vLLM general plugin (``register``), installing
  :mod:`~vllm_integration.hooks` (the bindings of :mod:`~vllm_integration.hook_table`) after
  :mod:`~vllm_integration.drift` checked the installed vLLM against that table;
* :mod:`~vllm_integration.session` — per-model sessions: plans, reloads in progress, reload
  checks (``attach``, ``plan_for``);
* :mod:`~vllm_integration.snapshot` — census snapshots and their moved / undeclared diff;
* :mod:`~vllm_integration.worker_extension` — ``DerivgraphWorkerExtension`` RPCs;
* :mod:`~vllm_integration.helpers` — ``refill_derived``, ``keep_constants``,
  ``replace_parameter`` for hand-written post-load code.

Importing this package imports nothing from vLLM (and not torch until a submodule needs it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["attach", "plan_for", "register"]


def __getattr__(name: str) -> Any:
    if name == "register":
        from vllm_integration.plugin import register  # lazy: a façade that loads nothing

        return register
    if name in ("attach", "plan_for"):
        from vllm_integration import session  # lazy: torch

        return getattr(session, name)
    raise AttributeError(f"module 'vllm_integration' has no attribute {name!r}")
