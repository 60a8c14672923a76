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


def _module_name(parts: tuple[str, ...]) -> tuple[str, bool]:
    """The module name of a file from its path parts (the last one its file name) and whether
    it is a package's ``__init__``."""
    *head, last = parts
    dot = last.rfind(".")
    stem = last[:dot] if 0 < dot < len(last) - 1 else last  # ``PurePath.stem``'s rule
    if stem == "__init__":
        return ".".join(head), True
    return ".".join([*head, stem]), False


def _root(display: str, is_pkg: bool) -> str:
    """The root a file's display path is relative to (absolute paths: none)."""
    if is_pkg:
        return "PKGROOT"
    return "" if Path(display).is_absolute() else "SRCROOT"


def _walk_py(root: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(folder, parts)`` of each ``.py`` file under ``root``, folder by folder, sorted:
    ``parts`` is its path relative to ``root`` (read from the walk's strings, not with
    :mod:`pathlib`, which costs more than the walk on a tree of thousands of files)."""
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        sub = dirpath[len(top):].lstrip(os.sep)
        head = tuple(sub.split(os.sep)) if sub else ()
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield dirpath, (*head, name)


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
        real = os.path.realpath(entry)
        if entry.is_file():
            module, pkg = _module_name((entry.name,))
            display = entry.name if is_pkg else _display(entry, None)
            out.setdefault(real, SourceFile(entry, display, module, pkg, _root(display, is_pkg)))
            continue
        base = (entry.name,) if entry.name else ()  # ``Path(".").name`` is empty
        for folder, parts in _walk_py(entry):
            file = Path(folder, parts[-1])
            module, pkg = _module_name((*base, *parts))
            display = "/".join((*base, *parts)) if is_pkg else _display(file, None)
            out.setdefault(os.path.join(real, *parts),
                           SourceFile(file, display, module, pkg, _root(display, is_pkg)))
    return sorted(out.values(), key=lambda f: f.display)
