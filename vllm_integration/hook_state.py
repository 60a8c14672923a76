"""Whether the vLLM hooks act: :mod:`.hooks` switches it on install and off on uninstall; every
wrapper asks :func:`active` before doing anything."""

from __future__ import annotations

from vllm_integration.config import current_mode

__all__ = ["active", "is_installed", "set_installed"]

_installed = False


def set_installed(value: bool) -> None:
    """Record whether the hooks are installed (called by :mod:`.hooks` only)."""
    global _installed
    _installed = value


def is_installed() -> bool:
    """True while the hooks are installed."""
    return _installed


def active() -> bool:
    """Installed, and the integration's mode is not ``off``."""
    return _installed and current_mode() != "off"
