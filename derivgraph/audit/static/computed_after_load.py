"""Which attribute of a scale product holds a loaded value: a parameter, or one post-load code
computes.

``attention.scale * attention._q_scale_float * k_scale`` names two scale-like attributes; only
one of them holds anything loaded. How each is computed tells them apart: ``_q_scale_float`` is
stored by post-load code from a loaded tensor (``layer._q_scale_float = layer._q_scale.item()``),
while ``scale`` is stored by constructors only (``self.scale = float(scale)``: the softmax scale
from the model config). Likewise ``layer.w13_weight_scale`` against ``layer.swiglu_alpha`` (an
activation constant its layer's constructor sets).

:func:`computed_after_load` tells whether ``attr`` is registered as a parameter (or a persistent
buffer: ``register_parameter("w13_weight_scale", ...)``, ``replace_parameter(layer, "x", ...)``),
which the checkpoint loads, or some store of ``<name>.attr`` through a receiver of one
name (``self.x =``, ``layer.x =``: the receivers a read ``layer.x`` matches) sits in code that
runs after loading (the post-load reach of the scan, or a weight loader). The weight evidence
names such attributes before the others (:func:`.readers.derives_from`'s ``prefer``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from derivgraph.audit.static.loaders import is_loader_name
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.scope import POST_LOAD_ROOTS

__all__ = ["computed_after_load", "computed_weight", "preferrer"]

_RECEIVER = re.compile(r"[ \t]*[A-Za-z_]\w*")


def _post_load_name(name: str) -> bool:
    """A post-load root of the scope rule (:data:`.scope.POST_LOAD_ROOTS`, the post-load part of
    :data:`.scope.ROOT_FUNCTIONS`) or a weight loader
    (:func:`.loaders.is_loader_name`): code that runs after (or while) weights load."""
    return name in POST_LOAD_ROOTS or is_loader_name(name)


def computed_after_load(index: ReaderIndex, attr: str) -> bool:
    """Whether ``attr`` is a parameter or post-load code stores it (module docstring)."""
    return index.memo(f"computed-after-load:{attr}", lambda: _stored_after_load(index, attr))


def _stored_after_load(index: ReaderIndex, attr: str) -> bool:
    if not attr.isidentifier():
        return False
    # ``register_parameter(``, ``replace_parameter(``, ``register_buffer(`` after no word
    # character: written from the literal ``re`` (looked behind after it), so that a search
    # skips to each ``re`` instead of trying every position as a leading ``\b`` makes it
    registered = re.compile(rf"re(?<!\wre)(?:gister_parameter|place_parameter|gister_buffer)\("
                            rf"\s*(?:[\w.]+\s*,\s*)?[\"']{re.escape(attr)}[\"']([^)\n]*)")
    store = re.compile(rf"\.{re.escape(attr)}[ \t]*(?::[^=\n]*)?(?:[-+*/@%&|^]|//)?=(?!=)")
    for i in index.files_naming(attr):  # a registration without a ``.attr`` read is missed
        text = index.files[i][1]
        quoted = f"{attr}'" in text or f'{attr}"' in text
        if quoted and any("persistent=False" not in r.group(1)
                          for r in registered.finditer(text)):
            return True  # a parameter (or persistent buffer) the checkpoint loads
        for m in store.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not _RECEIVER.fullmatch(text, line_start, m.start()):
                continue  # not a statement's target through a one-name receiver
            cls, funcs = index.enclosing(i, m.start())
            if any(_post_load_name(f) or (i, cls, f) in index.post_load for f in funcs):
                return True
    return False


def computed_weight(index: ReaderIndex, weight: str) -> bool:
    """Whether a weight :func:`.readers.derives_from` names (``layer.w13_weight_scale``) is an
    attribute read whose attribute post-load code computes."""
    m = re.fullmatch(r"[\w.]*\.(\w+)", weight)
    return m is not None and computed_after_load(index, m.group(1))


def preferrer(index: ReaderIndex) -> Callable[[str], bool]:
    """:func:`computed_after_load` over ``index``, as :func:`.readers.derives_from`'s
    ``prefer``."""
    return lambda attr: computed_after_load(index, attr)
