"""Does this interpreter move the dict version tag that ``derivgraph.dict_versions`` reads?

Torch-free, so it runs under any CPython on the machine::

    for v in 3.10 3.11 3.12 3.13; do python$v benchmarks/check_dict_tags.py; done

Prints the version, whether every store below moved the word at offset 24 of the dict, and how
many did not. The library's own self-test (``derivgraph.dict_versions._self_test``) is the proof
used at run time; this script shows which interpreters pass it without installing torch there.
"""

from __future__ import annotations

import ctypes
import sys
from collections import OrderedDict, defaultdict


def tag(d: dict) -> int:
    return ctypes.c_int64.from_address(id(d) + 24).value


class Probe:
    pass


class Custom:
    def __setattr__(self, key: str, value: object) -> None:
        object.__setattr__(self, key, value)


def store(obj: object, value: object) -> None:
    obj.attr = value  # specialised by the interpreter after a few runs


def main() -> None:
    plain = {"a": object()}
    ordered = OrderedDict(a=object())
    probe = Probe()
    probe.attr = object()
    custom = Custom()
    custom.x = 1
    defaulted: defaultdict = defaultdict(list)
    steps = [
        (plain, lambda: plain.__setitem__("a", object())),
        (plain, lambda: plain.__setitem__("b", 1)),
        (plain, lambda: plain.__delitem__("b")),
        (plain, lambda: plain.update(c=2)),
        (plain, lambda: plain.pop("c")),
        (plain, lambda: plain.setdefault("d", 3)),
        (plain, plain.clear),
        (ordered, lambda: ordered.__setitem__("a", object())),
        (ordered, lambda: ordered.pop("a")),
        (custom.__dict__, lambda: setattr(custom, "x", object())),
        (defaulted, lambda: defaulted["z"]),
    ]
    steps += [(probe.__dict__, lambda: store(probe, object())) for _ in range(40)]
    early = Probe()
    early.attr = 1  # stored before its __dict__ exists
    steps += [(early.__dict__, lambda: store(early, object())) for _ in range(40)]
    moved = []
    for d, mutate in steps:
        before = tag(d)
        mutate()
        moved.append(tag(d) != before)
    print(sys.version.split()[0], "moves" if all(moved) else "does not move",
          f"({moved.count(False)} of {len(moved)} stores missed)")


if __name__ == "__main__":
    main()
