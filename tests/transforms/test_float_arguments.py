"""A float64 number argument (a Python float or np.float64) is a signature entry of its own
(kinds.FLOAT_ARG): what a loop computes from it and ints goes into float64 tape columns,
where the same code with a float32 or an int argument keeps its tuple tape (a float32 times
an int is a float32). Gradients against central differences for each."""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms.analyses.kinds import FLOAT_ARG, NUMBER, param_kind, signature

import adgen
from tests.gradcheck import check_grad


def from_the_factor(x, g):
    s = 0.0
    for i in range(len(x)):
        a = g * (i + 1)  # a float64 with a float64 g only
        s = s + np.sin(a) * x[i]
    return s


def test_signature_entries():
    assert signature((0.5, np.float64(0.5))) == (FLOAT_ARG, FLOAT_ARG)
    assert signature((np.float32(0.5), 2, True)) == (NUMBER, NUMBER, None)
    assert param_kind(FLOAT_ARG) == NUMBER


@pytest.mark.parametrize("g", [0.7, np.float64(0.7)], ids=type)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_float64_factor_takes_typed_columns(g, mutation):
    x = np.array([0.3, -0.8, 0.5, 1.1])
    assert "tape_columns(" in adgen.source(from_the_factor, x, g)
    check_grad(from_the_factor, (x, g), argnums=(0, 1),
               grad=lambda f, argnums: adgen.grad(f, argnums=argnums, mutation=mutation))


@pytest.mark.parametrize("g", [np.float32(0.7), 2], ids=type)
def test_a_float32_or_int_factor_keeps_its_tuple_tape(g):
    x = np.array([0.3, -0.8, 0.5, 1.1])
    src = adgen.source(from_the_factor, x, g)
    assert "tape_columns(" not in src and ".append(" in src
    check_grad(from_the_factor, (x, g), argnums=0)
