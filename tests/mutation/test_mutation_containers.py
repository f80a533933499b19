"""Issue 3, containers and objects: list append then ``np.stack``, a dict of per-step states, an
object whose attribute is reassigned, a method that caches its input on ``self``, and the
aliasing that containers and objects create (an element or a cached input mutated in place).
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import Case, run_case


def _vec(seed: int, n: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


def list_stack(x):
    rows = []
    for k in range(3):
        rows.append(np.sin(x * (k + 1.0)))
    return np.sum(np.stack(rows) ** 2)


def list_element_mutated(x):
    rows = [x, np.cos(x)]
    z = rows[0] * rows[0]
    rows[0] += 1.0          # ndarray.__iadd__: x itself changes (the final state shows it)
    return np.sum(z) + np.sum(np.stack(rows) ** 2)


def dict_states(x):
    states = {}
    s = x
    for k in range(4):
        s = np.tanh(s) + 0.1 * x
        states[k] = s
    total = 0.0
    for k in range(4):
        total = total + (k + 1.0) * np.sum(states[k])
    return total


class Scaler:
    def __init__(self, w):
        self.w = w


def attr_reassigned(w, x):
    m = Scaler(w)
    h = np.tanh(m.w * x)
    m.w = m.w * 2.0
    return np.sum(h) + np.sum(m.w * x)


def attr_of_argument(m, x):
    h = np.sin(m.w * x)
    m.w = m.w + x
    return np.sum(h * m.w)


class Layer:
    def __init__(self, w):
        self.w = w
        self.cache = None

    def forward(self, x):
        self.cache = x
        return np.tanh(self.w * x)


def cached_input(w, x):
    layer = Layer(w)
    h = layer.forward(x)
    return np.sum(h * layer.cache)


def cached_input_mutated(w, x):
    layer = Layer(w)
    h = layer.forward(x)
    layer.cache += 1.0
    return np.sum(h) + np.sum(x)


_CAPTURE_IN_FORWARD = ((Layer.forward, "return np.tanh(self.w * x)"), "h = layer.forward(x)")

CASES = [
    Case("list_append_stack", list_stack, lambda: (_vec(50),), sites=("rows.append(",)),
    Case("list_element_mutated", list_element_mutated, lambda: (_vec(51),), needed=True,
         conflicts=(("z = rows[0] * rows[0]", "rows[0] += 1.0"),),
         guarded=(("rows[0] += 1.0",),)),
    Case("dict_of_states", dict_states, lambda: (_vec(52),), sites=("states[k] = s",)),
    Case("attribute_reassigned", attr_reassigned, lambda: (_vec(53), _vec(54)), argnums=(0, 1),
         sites=("m.w = m.w * 2.0",)),
    # The object is an argument (not differentiated); its final state is compared too.
    Case("attribute_of_argument", attr_of_argument, lambda: (Scaler(_vec(55)), _vec(56)),
         argnums=(1,), sites=("m.w = m.w + x",)),
    Case("method_caches_input", cached_input, lambda: (_vec(57), _vec(58)), argnums=(0, 1),
         sites=((Layer.forward, "self.cache = x"),)),
    # The cache is x itself: += through it overwrites the x that self.w * x captured.
    Case("method_cache_mutated", cached_input_mutated, lambda: (_vec(59), _vec(60)),
         argnums=(0, 1), needed=True,
         conflicts=tuple((c, "layer.cache += 1.0") for c in _CAPTURE_IN_FORWARD),
         guarded=(("layer.cache += 1.0",),)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_container_case(case: Case, mutation: str, dtype: str) -> None:
    run_case(case, mutation, dtype)
