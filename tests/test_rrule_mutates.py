"""A rule for a function that writes an argument in place declares it with ``mutates=``."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def scale_in_place(buf, factor):
    """Stands for a C routine: buf *= factor, in place (adgen is not shown its source)."""
    np.multiply(buf, factor, out=buf)


@adgen.rrule(scale_in_place, mutates=(0,))
def _scale_rule(buf, factor):
    old = buf.copy()
    scale_in_place(buf, factor)

    def pullback(out_bar, buf_bar):
        # buf_bar: the adjoint of buf's new contents; return those of the old ones
        return buf_bar * factor, float(np.sum(buf_bar * old))

    return None, pullback


def uses_scale(x, f):
    y = np.sin(x)
    scale_in_place(y, f)       # result discarded: the pullback must still run
    return np.sum(y * y)


def captured_then_scaled(x, f):
    y = x * 1.0
    z = np.sum(y * y)          # reads y
    scale_in_place(y, f)       # overwrites it: guarded
    return z + np.sum(y)


@pytest.mark.parametrize("fn", [uses_scale, captured_then_scaled])
@pytest.mark.parametrize("argnum", [0, 1])
def test_mutating_rule_gradients(fn, argnum):
    x, f = np.array([0.3, -1.2, 0.8]), 1.7
    g = adgen.grad(fn, argnums=argnum)(x.copy(), f)
    assert_grad_close(g, numerical_grad(fn, [x, f], argnum))


def test_mutating_rule_call_is_a_guarded_site_under_strict():
    with pytest.raises(adgen.MutationError):
        adgen.grad(captured_then_scaled, mutation="strict")(np.array([0.3, 0.4]), 2.0)


def test_discarded_mutating_rule_call_keeps_its_pullback():
    decisions = {s.construct: s.decision for s in adgen.explain(uses_scale, file=None)}
    assert decisions.get("scale_in_place(y, f)       # result discarded: the pullback must "
                         "still run".split("#")[0].strip()) == "forced-pullback"
