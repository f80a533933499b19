"""NumPy functions adgen cannot differentiate are refused at the user's line with what to do.

(``np.vectorize``, refused here before session 28, is differentiated: tests/e2e/test_vectorize.py
checks it and its refusals at the user's line.) A keyword a rule does not take
(``np.take(x, i, mode="wrap")``) names what the rule takes. (``x.std(where=m)``, refused here
before session 29, is differentiated, as ``x.sum(where=m)`` and ``np.sum(x, where=m)`` are:
checked below against the selected entries' std.)"""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def positive_part_sum(v):
    return (v ** 2).std(where=v > 0)


def wrapped_take(v):
    return np.sum(np.take(v ** 2, [0, 4], mode="wrap"))  # MARK mode


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


def test_an_unknown_keyword_names_what_the_rule_takes():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(wrapped_take)(np.array([1.0, -2.0, 0.5]))
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line("# MARK mode"))
    assert "'mode'" in err.message
    assert "(a, indices, axis)" in err.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_std_with_where_is_the_selected_entries_std(mutation):
    # (refused until session 29, with the hint np.std(x[m])): the same value as NumPy's
    # where=, and the gradient of the selected entries' std
    x = np.array([1.0, -2.0, 0.5, 3.0])

    def selected(v):
        return np.std((v ** 2)[v > 0])

    assert np.isclose(selected(x), positive_part_sum(x))
    eps = 1e-6
    fd = np.array([(selected(x + eps * e) - selected(x - eps * e)) / (2 * eps)
                   for e in np.eye(4)])
    np.testing.assert_allclose(adgen.grad(selected)(x), fd, atol=1e-6)
    np.testing.assert_allclose(adgen.grad(positive_part_sum, mutation=mutation)(x), fd,
                               atol=1e-6)


def test_the_hint_works():
    def rewritten(v):
        return np.sum(v ** 2, where=v > 0)

    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(adgen.grad(rewritten)(x), np.where(x > 0, 2 * x, 0.0))
