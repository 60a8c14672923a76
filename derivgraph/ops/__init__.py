"""The op registry and every built-in op.

:mod:`.registry` holds :class:`OpDef` and ``OPS`` and imports nothing from this package; the
op libraries (:mod:`.builtin`, :mod:`.index`, :mod:`.layout`, :mod:`.collectives`) register
themselves on import, so importing ``derivgraph.ops`` gives the complete vocabulary.
"""

from derivgraph.ops.registry import (  # noqa: I001  (the registry first, then its plugins)
    DTYPES,
    OPS,
    OpDef,
    OpKind,
    broadcast_shapes,
    dtype_of,
    get_op,
    register_op,
    unregister_op,
)
from derivgraph.ops import builtin, collectives, index, layout  # noqa: F401  (register their ops)

__all__ = ["DTYPES", "OPS", "OpDef", "OpKind", "broadcast_shapes", "dtype_of", "get_op",
           "register_op", "unregister_op"]
