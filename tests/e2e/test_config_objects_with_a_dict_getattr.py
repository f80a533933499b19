"""A config object that serves its entries through ``__getattr__`` from a dict (``cfg.w``
reads ``self.d["w"]``), written the common way, which raises KeyError, not AttributeError,
for a name it lacks.

adgen asked every global the function reads for ``py_func`` (a numba dispatcher's Python
function) and got that KeyError: a raw ``KeyError: 'py_func'`` from grad, jvp and the
others. It asks only objects of numba's classes now. Expected values: central differences.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


class Config:
    def __init__(self, entries):
        self.d = entries

    def __getattr__(self, name):
        return self.d[name]              # KeyError for a missing entry


RS = np.random.RandomState(3)
W = RS.randn(3, 2)
X = RS.randn(4, 3)
CFG = Config({"w": W, "scale": 0.5})


def loss(x):
    return np.sum(np.tanh(x @ CFG.w)) * CFG.scale


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_with_a_global_config(mutation):
    np.testing.assert_allclose(adgen.grad(loss, mutation=mutation)(X.copy()),
                               numerical_grad(loss, (X.copy(),), 0), rtol=1e-6)


def test_jvp_and_an_entry_changed_between_calls():
    v = RS.randn(4, 3)
    _, dot = adgen.jvp(loss, (X.copy(),), (v,))
    np.testing.assert_allclose(dot, np.sum(numerical_grad(loss, (X.copy(),), 0) * v), rtol=1e-6)
    CFG.d["scale"] = 2.0
    try:
        np.testing.assert_allclose(adgen.grad(loss)(X.copy()),
                                   numerical_grad(loss, (X.copy(),), 0), rtol=1e-6)
    finally:
        CFG.d["scale"] = 0.5
