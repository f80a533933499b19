"""An error about a construct inside a function the differentiated one calls, in another
file (the user's other module, or a library adgen compiles as Python, such as
scipy.special.logsumexp), is located at the call in the user's code; it lost where the
construct was ("a call with *arguments is not supported" at ``return logsumexp(x)``, which has
none). The message now also names the callee's line."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import adgen


def test_a_construct_in_a_helper_module_names_both_lines(tmp_path, monkeypatch):
    (tmp_path / "helpers_h5.py").write_text(
        "import numpy as np\n"
        "\n"
        "TOTAL = 0.0\n"
        "\n"
        "def penalty(x):\n"
        "    global TOTAL\n"
        "    TOTAL = TOTAL + np.sum(x)\n"
        "    return np.sum(x ** 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers = importlib.import_module("helpers_h5")

    def loss(x):
        return helpers.penalty(x) + np.sum(x)

    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(loss)(np.ones(3))
    text = str(err.value)
    assert "test_errors_in_callees.py" in text.splitlines()[0]  # located at the user's call
    assert "return helpers.penalty(x) + np.sum(x)" in text
    # (a counter, CALLS += 1, is followed since session 29; a value with a derivative is not)
    assert f"in the function called there, at {tmp_path / 'helpers_h5.py'}:7" in text
    assert "TOTAL = TOTAL + np.sum(x)" in text
    sys.modules.pop("helpers_h5", None)


def test_scipy_logsumexp_says_the_construct_is_inside_scipy():
    special = pytest.importorskip("scipy.special")

    def loss(x):
        return special.logsumexp(x)

    x = np.array([0.5, -1.0, 2.0])
    try:
        g = adgen.grad(loss)(x)
    except adgen.AdgenError as err:  # where scipy's code holds what adgen refuses
        assert "return special.logsumexp(x)" in str(err)
        assert "in the function called there, at " in str(err)
        assert "scipy" in str(err).split("in the function called there", 1)[1]
    else:
        assert np.allclose(g, np.exp(x) / np.sum(np.exp(x)))


def test_a_refused_second_derivative_names_the_users_line():
    # it was located in generated code: '<adgen robust directional>:2:19' and
    # 'out, out_dot = robust_jvp(x, x_dot=given_tangent(direction0, x))' (median's second
    # derivatives work since session 11, a norm's with an ord since session 12: refused at a
    # zero vector, where the norm is not differentiable)
    def robust(x):
        m = np.linalg.norm(x, ord=3)
        return np.sum((x - m) ** 2)

    for run in (lambda x: adgen.hvp(robust)(x, np.ones(4)), lambda x: adgen.hessian(robust)(x)):
        with pytest.raises(adgen.RuleError, match="second derivatives at a zero vector") as err:
            run(np.zeros(4))
        text = str(err.value)
        assert text.startswith(__file__) or "test_errors_in_callees.py" in text.splitlines()[0]
        assert "m = np.linalg.norm(x, ord=3)" in text
        assert "directional" not in text and "x_dot" not in text


def test_the_median_s_second_derivative_is_the_hand_one():
    def robust(x):
        m = np.median(x)
        return np.sum((x - m) ** 2)

    x = np.array([0.3, -1.0, 2.0, 0.5])
    dm = np.array([0.5, 0.0, 0.0, 0.5])  # the two middle entries, 0.3 and 0.5
    ones = np.ones(4)
    want = 2 * np.eye(4) - 2 * np.outer(dm, ones) - 2 * np.outer(ones, dm) + 8 * np.outer(dm, dm)
    np.testing.assert_allclose(adgen.hessian(robust)(x), want, atol=1e-12)
    np.testing.assert_allclose(adgen.hvp(robust)(x, ones), want @ ones, atol=1e-12)
