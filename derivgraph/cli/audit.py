"""``derivgraph audit``: runtime and static audits from the command line."""

from __future__ import annotations

from typing import Any

from derivgraph.cli.audit_capture import add_parser as add_capture_parser
from derivgraph.cli.audit_runtime import add_runtime_parser
from derivgraph.cli.audit_static import add_static_parser
from derivgraph.cli.audit_vllm import add_parser as add_vllm_parser

__all__ = ["add_audit_parser"]


def add_audit_parser(sub: Any) -> None:
    """Add the ``audit`` command and its ``runtime``/``static``/``capture`` subcommands."""
    p = sub.add_parser("audit", help="find derived tensors no spec declares")
    audit_sub = p.add_subparsers(dest="audit_command", required=True)
    add_runtime_parser(audit_sub)
    add_static_parser(audit_sub)
    add_vllm_parser(audit_sub)
    add_capture_parser(audit_sub)
