"""analyses.container_aliases: which container writes another name may reach.

The end-to-end behaviour (refused with both lines, or differentiated against central
differences) is in tests/test_odd_inputs.py; here the analysis's answers on small functions.
"""

import textwrap

import gast
import pytest
from adgen.transforms.analyses.container_aliases import aliased_writes
from adgen.transforms.analyses.effects import effects


def _aliased(src: str) -> list[tuple[str, str]]:
    fn = gast.parse(textwrap.dedent(src)).body[0]
    return [(a.target, a.other) for a in aliased_writes(fn, effects(fn))]


@pytest.mark.parametrize("src, expected", [
    # a plain copy, read through the other name
    ("def f(w):\n    p = {'w': w}\n    q = p\n    q['w'] = w\n    return p['w']\n",
     [("q", "p")]),
    # only one name used after the copy: nothing to refuse
    ("def f(w):\n    p = {'w': w}\n    q = p\n    q['w'] = w\n    return q['w']\n", []),
    # written before the names were joined
    ("def f(w):\n    p = {'w': w}\n    p['w'] = w\n    q = p\n    return q['w'] + p['w']\n",
     []),
    # an object attribute written through a copy
    ("def f(m, w):\n    m2 = m\n    m2.a = w\n    return m.a\n", [("m2", "m")]),
    # through a list holding the dict
    (("def f(w):\n    p = {'w': w}\n    h = [p]\n    t = h[0]\n    t['w'] = w\n"
      "    return p['w']\n"), [("t", "p")]),
    # a container the loop makes afresh each iteration (a nested comprehension)
    (("def f(w):\n    outer = []\n    for i in range(2):\n        inner = []\n"
      "        inner.append(w)\n        outer.append(inner)\n    return outer\n"), []),
    # a call of the user's that may return its argument; an array argument joins nothing
    ("def f(w):\n    p = {'w': w}\n    q = g(p)\n    q['w'] = w\n    return p['w']\n",
     [("q", "p")]),
    ("def f(w):\n    q = g(w)\n    q['w'] = w\n    return w\n", []),
])
def test_aliased_writes(src: str, expected: list[tuple[str, str]]) -> None:
    assert _aliased(src) == expected
