"""The ``derivgraph`` command line: argparse front ends over the library; nothing imports it."""

from derivgraph.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
