"""A structured array written by field in forward mode (rec["a"] = x[:4]): its tangent has
no fields, and a plain IndexError ("only integers, slices ... are valid indices") escaped
the generated jvp code. It is refused at the user's line, as reverse mode refuses it."""
import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError


def table_energy(x):
    rec = np.zeros(4, dtype=[("a", float), ("b", float)])
    rec["a"] = x[:4]
    rec["b"] = x[4:8] ** 2
    return np.sum(rec["a"] * rec["b"])


def split_fields(x):
    # what the hint says: a dict of float arrays
    rec = {"a": np.zeros(4), "b": np.zeros(4)}
    rec["a"][:] = x[:4]
    rec["b"][:] = x[4:8] ** 2
    return np.sum(rec["a"] * rec["b"])


X = np.linspace(0.1, 0.8, 8)


@pytest.mark.parametrize("run", [
    lambda: adgen.jvp(table_energy, (X.copy(),), (np.ones(8),)),
    lambda: adgen.hessian(table_energy)(X.copy()),
    lambda: adgen.grad(table_energy)(X.copy()),
])
def test_structured_array_refused_at_the_line(run):
    with pytest.raises(AdgenError, match="structured array") as info:
        run()
    assert "test_structured_array_fields_forward.py" in str(info.value)


def test_the_hints_form_differentiates():
    v = np.linspace(-1.0, 1.0, 8)
    value, tangent = adgen.jvp(split_fields, (X.copy(),), (v,))
    # d/dx sum(a * b^2): b^2 . v[:4] + 2 a b . v[4:]
    expected = np.sum(X[4:] ** 2 * v[:4]) + np.sum(2 * X[:4] * X[4:] * v[4:])
    assert np.isclose(value, split_fields(X.copy()))
    assert np.isclose(tangent, expected)
