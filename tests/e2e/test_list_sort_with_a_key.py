"""``arrs.sort(key=...)`` of a list of arrays, as people order candidates by a score. It
was refused as an ndarray.sort with unknown arguments; it is now the sorted list bound to
the name where only that name reaches the list (as ``L.pop(i)``), and refused at the line,
saying what else reaches it, where another name or a caller shares it. A dict's ``pop`` is
differentiated where only its name reaches the dict (since session 29,
tests/e2e/test_dict_pop.py), and refused with a dict's rewrite where a caller shares it (the
list's hint told to build a shorter list).
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError

X = np.array([0.3, -0.7, 1.2])


def score(a):
    return float(np.sum(a))


def best_and_worst(x):
    cands = [x * 2.0, np.sin(x), x ** 2]
    cands.sort(key=score)
    return np.sum(cands[0] + 3.0 * cands[-1] * cands[1])


def best_first(x):
    cands = [x * 2.0, np.sin(x), x ** 2]
    cands.sort(key=lambda a: float(np.sum(a)), reverse=True)
    return np.sum(cands[0] ** 2 - cands[2])


def sorted_through_an_alias(x):
    cands = [x * 2.0, np.sin(x), x ** 2]
    kept = cands
    cands.sort(key=score)
    return np.sum(kept[0])


def popped_from_a_dict(x):
    d = {"a": x, "b": x * 2.0}
    b = d.pop("b")
    return np.sum(b * d["a"])


@pytest.mark.parametrize("f", [best_and_worst, best_first])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [best_and_worst, best_first])
def test_jvp(f):
    t = np.array([1.0, 0.5, -2.0])
    _, tangent = adgen.jvp(f, (X,), (t,))
    assert tangent == pytest.approx(float(numerical_grad(f, (X,), 0) @ t), rel=1e-6)


@pytest.mark.parametrize("entry", ["grad", "jvp"])
def test_a_shared_list_is_refused_at_the_line(entry):
    with pytest.raises(UnsupportedError, match="cands.sort") as info:
        if entry == "grad":
            adgen.grad(sorted_through_an_alias)(X)
        else:
            adgen.jvp(sorted_through_an_alias, (X,), (X,))
    assert info.value.location.source_line.strip() == "cands.sort(key=score)"
    assert "sorted(cands" in str(info.value)


def popped_from_a_dict_given(d):
    b = d.pop("b")
    return np.sum(b * d["a"])


def calls_a_helper_popping(x):
    return popped_from_a_dict_given({"a": x, "b": x * 2.0})


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_dicts_pop_is_differentiated(policy):
    np.testing.assert_allclose(adgen.grad(popped_from_a_dict, mutation=policy)(X),
                               numerical_grad(popped_from_a_dict, (X,), 0), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(adgen.grad(popped_from_a_dict)(X), 4.0 * X)  # by hand


def test_a_dicts_pop_is_refused_with_a_dicts_rewrite():
    with pytest.raises(UnsupportedError, match=r"\.pop\(\) of a dict") as info:
        adgen.grad(calls_a_helper_popping)(X)
    assert info.value.location.source_line.strip() == 'b = d.pop("b")'
    assert "d.items()" in str(info.value)


# ``vals.sort()`` with no key, of a list the function builds from an array (x.tolist(),
# list(...), sorted(...)): it was lowered as ndarray.sort (np.take_along_axis of a list, a raw
# AttributeError "'list' object has no attribute 'ndim'") in every mode.
Y = np.array([0.7, -1.3, 2.1, 0.4])


def extremes_of_a_tolist(x):
    vals = x.tolist()
    vals.sort()
    return vals[0] * vals[-1] + sum(vals)


def middle_of_a_list(x):
    vals = list(x ** 2)
    vals.sort()
    return vals[1] * vals[2]


def resorted(x):
    vals = sorted(x, reverse=True)
    vals.sort()
    return vals[0] - 3.0 * vals[-1]


def sorted_with_an_alias(x):
    vals = x.tolist()
    kept = vals
    vals.sort()
    return kept[0]


@pytest.mark.parametrize("f", [extremes_of_a_tolist, middle_of_a_list, resorted])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_sort_of_a_built_list(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(Y), numerical_grad(f, (Y,), 0),
                               rtol=1e-6, atol=1e-8)


def test_sort_of_a_built_list_by_hand_and_forward():
    # sorted: [-1.3, 0.4, 0.7, 2.1] = x[1], x[3], x[0], x[2]
    g = adgen.grad(extremes_of_a_tolist)(Y)
    np.testing.assert_allclose(g, [1.0, 2.1 + 1.0, -1.3 + 1.0, 1.0])
    t = np.array([1.0, 0.5, -2.0, 0.25])
    for f in (extremes_of_a_tolist, middle_of_a_list, resorted):
        _, tangent = adgen.jvp(f, (Y,), (t,))
        assert tangent == pytest.approx(float(numerical_grad(f, (Y,), 0) @ t), rel=1e-6)
    h = adgen.hessian(middle_of_a_list)(Y)  # squares sorted: x3, x0, x1, x2; x0**2 * x1**2
    want = np.zeros((4, 4))
    want[0, 0], want[1, 1] = 2 * Y[1] ** 2, 2 * Y[0] ** 2
    want[0, 1] = want[1, 0] = 4 * Y[0] * Y[1]
    np.testing.assert_allclose(h, want, atol=1e-12)


def test_sort_of_a_shared_built_list_is_refused_at_the_line():
    with pytest.raises(UnsupportedError, match=r"vals\.sort\(\) is differentiated") as info:
        adgen.grad(sorted_with_an_alias)(Y)
    assert info.value.location.source_line.strip() == "vals.sort()"
    assert "vals = sorted(vals)" in str(info.value)
