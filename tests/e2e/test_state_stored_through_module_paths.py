"""A simulation keeping its state in a module of the user's package, written by the loss
through a dotted path and read back: ``simstate.grid.u = np.tanh(u)`` then
``simstate.grid.energy()``, ``pkg.simstate.grid.u = ...`` through the package,
``g = simstate.grid; g.u = ...``, or ``simstate.last = ...`` on the module itself.

grad followed none of the package paths: ``t = pkg.simstate.grid`` (a dotted path the normal
form keeps whole) was no part of ``pkg`` to the alias analysis, so the later read of
``pkg.simstate.grid.u`` was a constant: a gradient of zeros, silently, under both policies
(a path through the module, ``simstate.grid.u = ...``, was refused). jvp gave a zero tangent
for all three, silently, and raised a NameError in its own code for a store into the module's
attribute. Each is now refused at the user's line, naming the object and a way forward
(pass it as an argument), and a store into a module attribute read back keeps its gradient
(reverse mode) while jvp refuses it. Expected values: central differences.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError

STATE = '''
import numpy as np


class Grid:
    def __init__(self, n):
        self.u = np.zeros(n)

    def energy(self):
        return np.sum(np.diff(self.u) ** 2) + np.sum(self.u ** 2)


grid = Grid(3)
'''

SIM = '''
import numpy as np
import simpkg_paths.simstate
from simpkg_paths import simstate


def through_the_package(u):
    simpkg_paths.simstate.grid.u = np.tanh(u)
    return simpkg_paths.simstate.grid.energy()


def through_the_package_read(u):
    simpkg_paths.simstate.grid.u = np.tanh(u)
    return np.sum(simpkg_paths.simstate.grid.u ** 2)


def through_the_module(u):
    simstate.grid.u = np.tanh(u)
    return simstate.grid.energy()


def through_another_name(u):
    g = simstate.grid
    g.u = np.tanh(u)
    return simstate.grid.energy()


def on_the_module(u):
    simstate.last = np.tanh(u)
    return np.sum(simstate.last ** 2)
'''

U = np.array([0.3, -0.2, 0.9])
REFUSED = ["through_the_package", "through_the_package_read", "through_the_module",
           "through_another_name"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("paths") / "simpkg_paths"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "simstate.py").write_text(STATE)
    (root / "sim.py").write_text(SIM)
    sys.path.insert(0, str(root.parent))
    try:
        yield importlib.import_module("simpkg_paths.sim")
    finally:
        sys.path.remove(str(root.parent))
        for name in [m for m in sys.modules if m.startswith("simpkg_paths")]:
            del sys.modules[name]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("which", REFUSED)
def test_a_gradient_through_a_module_path_is_refused_at_the_store(sim, which, mutation):
    f = getattr(sim, which)
    with pytest.raises(UnsupportedError) as err:
        adgen.grad(f, mutation=mutation)(U.copy())
    assert err.value.location.file.endswith("sim.py")
    assert ".u = np.tanh(u)" in err.value.location.source_line


@pytest.mark.parametrize("which", REFUSED)
def test_a_jvp_through_a_module_path_is_refused_at_the_store(sim, which):
    f = getattr(sim, which)
    with pytest.raises(UnsupportedError, match="as an argument") as err:
        adgen.jvp(f, (U.copy(),), (np.ones(3),))
    assert err.value.location.file.endswith("sim.py")
    assert ".u = np.tanh(u)" in err.value.location.source_line


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_module_attribute_read_back(sim, mutation):
    g = adgen.grad(sim.on_the_module, mutation=mutation)(U.copy())
    np.testing.assert_allclose(g, numerical_grad(sim.on_the_module, (U.copy(),), 0),
                               rtol=1e-6)
    with pytest.raises(UnsupportedError, match="attribute of the module simstate") as err:
        adgen.jvp(sim.on_the_module, (U.copy(),), (np.ones(3),))
    assert "simstate.last = np.tanh(u)" in err.value.location.source_line


def test_the_same_object_passed_as_an_argument(sim):
    # the way forward both messages give
    def through_an_argument(u, grid):
        grid.u = np.tanh(u)
        return grid.energy()

    grid = sys.modules["simpkg_paths.simstate"].grid
    ref = numerical_grad(lambda u: through_an_argument(u, grid), (U.copy(),), 0)
    np.testing.assert_allclose(adgen.grad(through_an_argument)(U.copy(), grid), ref, rtol=1e-6)
    v = np.array([1.0, -0.5, 2.0])
    _, dot = adgen.jvp(through_an_argument, (U.copy(), grid), (v, None))
    np.testing.assert_allclose(dot, ref @ v, rtol=1e-6)
