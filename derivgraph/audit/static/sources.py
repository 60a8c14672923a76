"""The files a static audit reads: an installed package located without importing it, and the
``.py`` files under folders, each with its display path and module name."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from derivgraph.audit.static.finding import SourceFile
from derivgraph.errors import PackageNotFound

__all__ = ["collect_files", "locate_package"]


def locate_package(name: str) -> Path:
    """The directory (or file) of an installed package, found without importing it."""
    head, *rest = name.split(".")
    spec = importlib.machinery.PathFinder.find_spec(head) or importlib.util.find_spec(head)
    if spec is None:
        raise PackageNotFound(f"no package named {name!r} is installed for this interpreter")
    if spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin:
        base = Path(spec.origin)
    else:
        raise PackageNotFound(f"package {name!r} has no source location (namespace or builtin)")
    for part in rest:
        if (base / part).is_dir():
            base = base / part
        elif (base / f"{part}.py").is_file():
            base = base / f"{part}.py"
        else:
            raise PackageNotFound(f"{name!r}: no module {part!r} under {base}")
    return base


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        return path.relative_to(root).as_posix()
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _module_name(rel: Path) -> tuple[str, bool]:
    parts = list(rel.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _walk_py(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield Path(dirpath, name)


def collect_files(paths: Iterable[str | Path] = (), package: str | None = None) -> list[SourceFile]:
    """The ``.py`` files under ``paths`` and the ``package``, sorted, each once.

    Files under ``paths`` are shown relative to the working directory (root ``SRCROOT``) when
    they are under it, else absolute; package files relative to the folder holding the package
    (root ``PKGROOT``), e.g. ``vllm/model_executor/...``.
    """
    out: dict[str, SourceFile] = {}
    entries: list[tuple[Path, bool]] = [(Path(p), False) for p in paths]
    if package:
        entries.append((locate_package(package), True))
    for entry, is_pkg in entries:
        if not entry.exists():
            raise FileNotFoundError(f"{entry}: no such file or directory")
        files = [entry] if entry.is_file() else list(_walk_py(entry))
        real = os.path.realpath(entry)
        for file in files:
            rel = Path(entry.name, file.relative_to(entry)) if file != entry else Path(entry.name)
            module, pkg = _module_name(rel) if file != entry else _module_name(Path(file.name))
            if is_pkg:
                display, root = rel.as_posix(), "PKGROOT"
            else:
                display = _display(file, None)
                root = "" if Path(display).is_absolute() else "SRCROOT"
            key = real if file == entry else os.path.join(real, file.relative_to(entry))
            out.setdefault(key, SourceFile(file, display, module, pkg, root))
    return sorted(out.values(), key=lambda f: f.display)
