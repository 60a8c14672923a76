"""The vLLM general plugin: ``vllm.general_plugins: derivgraph = vllm_integration.plugin:register``.

vLLM calls :func:`register` in every process it starts (API server, engine core, each worker).
It is cheap — it imports no vLLM module: it reads the installed vLLM's version; on a version
the hook table was not verified for it also parses the table's source files
(:func:`vllm_integration.drift.preflight`: one warning naming every target that cannot be
wrapped; ``strict`` mode refuses to start unless ``DERIVGRAPH_ALLOW_UNVERIFIED_VLLM=1``). It
then installs a post-import hook and patches modules already imported (each wrapper checks its
target's signature again) — and it is idempotent. ``DERIVGRAPH_VLLM_MODE=off`` skips
installation entirely.
"""

from __future__ import annotations

import logging

from vllm_integration import hook_table
from vllm_integration.config import current_mode
from vllm_integration.hooks import install, is_installed

__all__ = ["register"]

logger = logging.getLogger(__name__)


def register() -> None:
    """Install derivgraph's hooks into vLLM's load and reload paths (once per process).

    Raises :class:`vllm_integration.drift.VllmDriftError` (DG060) in ``strict`` mode when
    the installed vLLM is not a verified version or a hook target drifted.
    """
    mode = current_mode()  # an unknown mode raises here, at startup, not mid-reload
    if mode == "off":
        logger.debug("derivgraph: DERIVGRAPH_VLLM_MODE=off, vLLM hooks not installed")
        return
    if is_installed():
        return
    disabled: frozenset[str] = frozenset()
    version = hook_table.installed_version()
    if version not in hook_table.VERIFIED_VLLM_VERSIONS:  # verified: the table is its source
        from vllm_integration.drift import (  # lazy: derivgraph, only for an unverified vLLM
            check_source,
            preflight,
        )

        disabled = preflight(mode, check_source(version=version)).disabled_keys()
    if install(disabled=disabled):
        logger.info("derivgraph: vLLM hooks installed (mode %s)", mode)
