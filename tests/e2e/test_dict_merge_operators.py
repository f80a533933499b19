"""Dicts of arrays merged with ``|`` and ``|=``, as users write them.

adgen failed inside its compiler (``CompilerError: internal error in pass 'reverse' ...
KeyError: BitOr``) on ``g = d | e`` and ``d |= e`` when the dicts hold values with a
gradient, and in pass 'tangent' for ``jvp``. Both are now an ``UnsupportedError`` naming the
user's line and the rewrite (``g = dict(d); g.update(e)``), which differentiates right
(checked against central differences). ``|`` of boolean masks, which have no gradient, is
unaffected.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def merged(x):
    base = {"a": x}
    extra = {"b": x * 2.0, "a": np.sin(x)}
    both = base | extra
    return np.sum(both["a"] * both["b"])


def merged_in_place(x):
    base = {"a": x}
    base |= {"b": x * 2.0}
    return np.sum(base["a"] * base["b"])


def merged_by_update(x):
    base = {"a": x}
    extra = {"b": x * 2.0, "a": np.sin(x)}
    both = dict(base)
    both.update(extra)
    return np.sum(both["a"] * both["b"]) + np.sum(base["a"])


def masks_or(x):
    keep = (x > 0.0) | (x < -0.5)
    return np.sum(np.where(keep, x * x, 0.0))


X = np.array([0.5, -1.0, 0.2])


@pytest.mark.parametrize("f", [merged, merged_in_place])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_merge_operator_is_refused_at_its_line(f, mutation):
    with pytest.raises(adgen.UnsupportedError, match=r"operator \|") as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "test_dict_merge_operators.py" in str(err.value)
    assert "g.update(e)" in str(err.value)


def test_merge_operator_is_refused_in_forward_mode():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.jvp(merged, (X.copy(),), (np.ones(3),))
    assert "both = base | extra" in str(err.value)


@pytest.mark.parametrize("f", [merged_by_update, masks_or])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_update_and_masks_differentiate(f, mutation):
    want = numerical_grad(f, (X.copy(),), 0)
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()), want)


def shifted(x):
    return np.sum(x << 2)


def scaled_by_power_of_two(x):
    return np.sum(x * 2 ** 2)


def test_shift_is_refused_with_the_product_it_stands_for():
    # the hint named dict merging for << and >> too (session 14)
    with pytest.raises(adgen.UnsupportedError, match=r"operator <<") as err:
        adgen.grad(shifted)(X.copy())
    assert "x * 2 ** k" in str(err.value)
    assert "update" not in str(err.value)
    want = numerical_grad(scaled_by_power_of_two, (X.copy(),), 0)
    assert_grad_close(adgen.grad(scaled_by_power_of_two)(X.copy()), want)
