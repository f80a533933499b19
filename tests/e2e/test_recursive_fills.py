"""A recursive helper filling a buffer in place (``buf[i] = x[i] * buf[i - 1];
fill(buf, x, i + 1)``, the call made as a statement): the recursive call ran as the plain
function, unseen, so grad gave [1, 0, 0, 0] under mutation="save" for [1.264, 0.072, ...]
and hessian gave zeros, silently. adgen refused recursive in-place updates only where the
recursive call's result was kept; it now refuses this one too, at the user's call, naming
the user's function (also for hessian, which compiles its jvp). jvp, which ran the
recursion as Python does, stays right."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_jvp

import adgen
from adgen.errors import UnsupportedError


def fill(buf, x, i):
    if i >= buf.shape[0]:
        return
    buf[i] = x[i] * (buf[i - 1] if i > 0 else 1.0)
    fill(buf, x, i + 1)


def cumulative_products(x):
    buf = np.zeros(x.shape[0])
    fill(buf, x, 0)
    return np.sum(buf)


X = np.array([0.3, 1.1, -0.4, 0.9])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_refuses_at_the_call(mutation):
    with pytest.raises(UnsupportedError, match="fill calls itself and writes its arguments"):
        adgen.grad(cumulative_products, mutation=mutation)(X.copy())


def test_hessian_refuses_in_the_users_name():
    with pytest.raises(UnsupportedError, match=r"^(?!.*_jvp).*fill calls itself"):
        adgen.hessian(cumulative_products)(X.copy())


def test_jvp_is_right():
    check_jvp(cumulative_products, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])



RECURSIVE = """import numpy as np


def fill(buf, x, i):
    if i >= buf.shape[0]:
        return
    buf[i] = x[i] * (buf[i - 1] if i > 0 else 1.0)
    fill(buf, x, i + 1)


def cumulative_products(x):
    buf = np.zeros(x.shape[0])
    fill(buf, x, 0)
    return np.sum(buf)
"""


def test_hessian_names_the_user_beside_another_functions_jvp_of_the_same_name(
        tmp_path, monkeypatch):
    # CI (--dist worksteal) ran this file after another test module's `fill`: that fill's jvp
    # code was alive as "<adgen fill jvp>", this one compiled as "<adgen fill jvp #2>", and
    # the refusal named fill_jvp, adgen's name, instead of fill
    (tmp_path / "elsewhere_fill.py").write_text(
        "import numpy as np\n\n\ndef fill(x):\n    return x * 2.0\n")
    (tmp_path / "recursive_fill.py").write_text(RECURSIVE)
    monkeypatch.syspath_prepend(str(tmp_path))
    from elsewhere_fill import fill as other
    from recursive_fill import cumulative_products as products

    h = adgen.hessian(lambda x: np.sum(other(x) ** 2))(np.ones(3))
    np.testing.assert_allclose(h, 8.0 * np.eye(3))
    with pytest.raises(UnsupportedError, match=r"^(?!.*_jvp).*fill calls itself"):
        adgen.hessian(products)(X.copy())
