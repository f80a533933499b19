"""Views a loop's pullback takes again instead of taping them.

- A view of a view of a part no later write changes (durbin's ``r[:k][::-1]``, ``t8 =
  t7[::-1]`` with ``t7 = r[:k]``): the pullback spells the chain out and takes it again
  (``values_again._unchanged_part``).
- A copied capture that is a view of another copy the row keeps (durbin's ``y[:k][::-1]``, a
  view of the copy of ``y[:k]``, shared_copies): the pullback takes the view of the copy
  again (``Pullback.views_of_copies``).

Gradients against central differences under both policies; look-alikes whose base is written
after the read (its view must stay on the tape); as users write them (a method, a lambda).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def durbin(r):
    n = r.shape[0]
    y = np.zeros(n)
    z = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = r[:k][::-1] @ y[:k]
        alpha = -(r[k] + s) / beta
        z[:k] = y[:k] + alpha * y[:k][::-1]
        y[:k] = z[:k]
        y[k] = alpha
    return np.sum(y ** 2)


def reversed_products(r, w):
    """A view of a view of a parameter, read for its value by a product's rule."""
    acc = 0.0
    for k in range(1, r.shape[0]):
        acc = acc + np.sin(r[:k][::-1] @ w[:k]) * w[k]
    return acc


def base_written_after(r, w):
    """Look-alike: the base is scaled after the read, so the view read changes."""
    r = r.copy()
    acc = 0.0
    for k in range(1, r.shape[0]):
        acc = acc + np.sin(r[:k][::-1] @ w[:k])
        r[k - 1] = r[k - 1] * 0.5
    return acc + np.sum(r ** 2)


def view_written_after(r, w):
    """Look-alike: the view itself is written after its read (through the first view)."""
    r = r.copy()
    acc = 0.0
    for k in range(1, r.shape[0]):
        t = r[:k]
        acc = acc + np.sin(t[::-1] @ w[:k])
        t[0] = t[0] * 0.5
    return acc + np.sum(r ** 2)


class Levinson:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, r):
        return self.scale * durbin(r)


def _autocorrelations(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return 0.6 ** np.arange(1, n + 1) + 0.01 * rng.standard_normal(n)


def _pair(n=7, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal(n)


@pytest.mark.parametrize("mutation", POLICIES)
def test_durbin(mutation):
    check_grad(durbin, (_autocorrelations(),), 0, mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [reversed_products, base_written_after, view_written_after])
def test_gradients(fn, mutation):
    check_grad(fn, _pair(), (0, 1), mutation=mutation)


def test_a_method_and_a_lambda():
    r = _autocorrelations(6, 2)
    check_grad(Levinson(0.5), (r,), 0)
    check_grad(lambda r: 2.0 * durbin(r * 1.0), (r,), 0)


# r[:k][::-1] taken from the array again (r, or r_1 after r = r.copy()), not its adjoint's
_TAKEN_AGAIN = r"= r(_\d+)?\[:k\]\[::-1\]"


def _code(text: str) -> str:
    """The pullback's code without its comments (which quote the user's lines)."""
    lines = text.split("_pullback(")[1].splitlines()
    return "\n".join(x for x in lines if not x.strip().startswith("#"))


def _row(text: str) -> str:
    """The names a loop's forward appends to its tape (one loop)."""
    forward = text.split("_pullback(")[0]
    return forward.split(".append(")[1].split("\n")[0]


def test_the_views_are_taken_again():
    text = adgen.source(durbin, _autocorrelations())
    pullback = _code(text)
    assert "= r[:k][::-1]" in pullback, text
    # the copy of y[:k] stays on the tape, its reversed view is taken again from it
    row = _row(text)
    copies = [c.strip(" ()") for c in row.split(",") if c.strip(" ()").startswith("saved_")]
    assert len(copies) == 1 and f"= {copies[0]}[::-1]" in pullback, text
    text = adgen.source(reversed_products, *_pair())
    assert re.search(_TAKEN_AGAIN, _code(text)), text


@pytest.mark.parametrize("fn", [base_written_after, view_written_after])
def test_written_views_stay_taped(fn):
    text = adgen.source(fn, *_pair())
    assert not re.search(_TAKEN_AGAIN, _code(text)), text
