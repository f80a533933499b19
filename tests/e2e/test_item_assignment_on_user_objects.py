"""``grid[i] = value`` on an object of the user's class that defines ``__setitem__`` (a grid
wrapping an array it writes into) runs that method, as Python does, and the gradient goes
through it.

adgen read ``g[i] = v`` as an item store into a container or an array whatever ``g`` was, and
refused it when the gradient ran ("an object of one of your classes was read as an array").
Expected values: central differences (tests/gradcheck.py) and a hand formula.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import MutationError, UnsupportedError

X = np.array([0.3, -1.2, 2.0])
POLICIES = ["save", "strict"]


class Grid:
    """Values on the nodes of a 1-D grid."""

    def __init__(self, n):
        self.data = np.zeros(n)

    def __setitem__(self, i, v):
        self.data[i] = v

    def __getitem__(self, i):
        return self.data[i]


class Log:
    """A grid that keeps the logarithm of what it is given."""

    def __init__(self, n):
        self.data = np.zeros(n)

    def __setitem__(self, i, v):
        self.data[i] = np.log(v)


def fill_in_a_loop(x):
    g = Grid(3)
    for i in range(3):
        g[i] = x[i] ** 2
    return np.sum(g.data * x)


def fill_a_slice(x):
    g = Grid(4)
    g[1:] = np.sin(x)
    return np.sum(g.data ** 2)


def transformed_on_store(x):
    lg = Log(3)
    for i in range(3):
        lg[i] = 1.0 + x[i] ** 2
    return np.sum(lg.data)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [fill_in_a_loop, fill_a_slice, transformed_on_store])
def test_item_assignment_runs_the_class_method(f, mutation):
    # (strict refused fill_a_slice until session 19, taking the store over the zeros
    # Grid.__init__ made for a write over values its gradient reads: it reads none)
    g = adgen.grad(f, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_that_transforms_the_value(mutation):
    g = adgen.grad(transformed_on_store, mutation=mutation)(X.copy())
    assert_grad_close(g, 2 * X / (1.0 + X ** 2))  # d/dx log(1 + x^2)


class Tripled(Grid):
    def __setitem__(self, i, v):
        self.data[i] = 3.0 * v


def fill_given(g: Grid, x):
    for i in range(3):
        g[i] = x[i] ** 2
    return np.sum(g.data * x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_parameter_annotated_with_the_class(mutation):
    g = adgen.grad(fill_given, argnums=1, mutation=mutation)(Grid(3), X.copy())
    assert_grad_close(g, numerical_grad(fill_given, (Grid(3), X.copy()), 1))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_subclass_given_for_the_annotation_is_refused_not_wrong(mutation):
    # Python runs Tripled.__setitem__; adgen cannot follow it through type(g): refused
    with pytest.raises(UnsupportedError, match="Tripled.__setitem__"):
        adgen.grad(fill_given, argnums=1, mutation=mutation)(Tripled(3), X.copy())


class Normed:
    """A grid that keeps the squared norm of the values it was built with."""

    def __init__(self, v):
        self.data = v * 1.0
        self.norm = np.sum(self.data ** 2)

    def __setitem__(self, i, v):
        self.data[i] = v


def overwrite_what_init_read(x):
    g = Normed(np.sin(x))
    g[1:] = x[1:] ** 2     # overwrites the data whose squares __init__ summed
    return g.norm + np.sum(g.data * x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_store_over_what_the_constructor_s_gradient_reads(mutation):
    if mutation == "strict":
        # the gradient of self.data ** 2 in __init__ reads the values g[1:] overwrites:
        # strict copies nothing, so it refuses (when it runs, at the write in __setitem__,
        # since session 20: a call changing an object is no longer refused when compiling)
        with pytest.raises(MutationError, match=r"g\[1:\] = x\[1:\] \*\* 2 hands g.data to "
                                                "the function called there, which overwrites"):
            adgen.grad(overwrite_what_init_read, mutation=mutation)(X.copy())
        return
    g = adgen.grad(overwrite_what_init_read, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(overwrite_what_init_read, (X.copy(),), 0))
