"""Set comprehensions of indices, keys or names (``{i % 2 for i in idx}``), used to pick items,
run as written: no derivative goes through a set of ints or strings. They were refused ("set
comprehensions are not supported"). A set of values with a derivative (``{float(v) for v in
x}``: a set keeps one of equal values, ordered by their hashes) is refused at its line.
Expected values: central differences (tests/gradcheck.py).
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import MissingRuleError

X = np.array([0.3, -0.7, 1.1, 0.4])
POLICIES = ["save", "strict"]


IDX = (3, 1, 3, 0, 1)


def distinct_rows(x):
    picked = {i for i in IDX if i != 0}
    s = 0.0
    for i in sorted(picked):
        s = s + x[i] ** 2 * (i + 1)
    return s


def signs_seen(x):
    seen = {int(v > 0) for v in x}  # ints: no derivative
    return np.sum(x ** 3) * len(seen) + np.sum(x[sorted(seen)])


def names_used(x, names=("w", "b", "w")):
    keys = {n.upper() for n in names}
    scale = 2.0 if "W" in keys else 1.0
    return scale * np.sum(np.sin(x)) * len(keys)


def rows_with_a_positive_entry(x):
    m = x.reshape(2, 2)
    rows = {int(i) for i in np.nonzero(m > 0)[0]}
    return sum(np.sum(m[i] ** 2) for i in sorted(rows))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [distinct_rows, signs_seen, names_used,
                                rows_with_a_positive_entry])
def test_a_set_of_indices_or_names_picks_items(fn, mutation):
    assert_grad_close(adgen.grad(fn, mutation=mutation)(X), numerical_grad(fn, (X,), 0))


@pytest.mark.parametrize("fn", [distinct_rows, signs_seen, rows_with_a_positive_entry])
def test_jvp_through_a_set_of_indices(fn):
    check_jvp(fn, (X,), (np.array([0.5, -1.0, 2.0, 0.3]),))


def test_hessian_through_a_set_of_indices():
    v = np.array([0.5, -1.0, 2.0, 0.3])
    expected = numerical_grad(lambda z: np.dot(adgen.grad(distinct_rows)(z), v), (X,), 0)
    np.testing.assert_allclose(adgen.hessian(distinct_rows)(X) @ v, expected, rtol=1e-6,
                               atol=1e-8)


def distinct_values(x):
    vals = {float(v) * 2.0 for v in x}  # BAD: values with a derivative in a set
    return sum(vals)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_set_of_values_with_a_derivative_is_refused_at_its_line(mutation):
    with pytest.raises(MissingRuleError) as info:
        adgen.grad(distinct_values, mutation=mutation)(X)
    assert info.value.location.line == distinct_values.__code__.co_firstlineno + 1
    assert "a set keeps one of equal values" in str(info.value)
