"""adgen.pullback_runs.may_be_complex (whether generated code may compute complex values, so a complex
cotangent reaching a real rule raises instead of losing its imaginary part) finds the same
marks as one search of the whole source, which it now makes only on the lines a fast scan
points at (issue 15: the search cost 1.6 ms of Polybench ADI's cold build)."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import numpy as np
import pytest

import adgen
from adgen.api import may_be_complex

# the marks, searched over the whole text at once (what may_be_complex answered before)
MARKS = re.compile(r"\bfft\b|\b\d+(\.\d*)?j\b|complex|\bconj|\bangle\b|\bvdot\b")

SOURCES = [
    "y = x * 1.5j\n", "y = x * 2j", "y = 1.j + x\n", "y = x * 12j\n", "t2j = x\n", "adj = 1\n",
    "z = np.fft.fft(x)\n", "z = fftn(x)\n", "w = np.conj(v)", "a = np.angle(z)\nb = 1\n",
    "d = x.astype(np.complex128)\n", "s = np.vdot(a, b)\n", "s = vdots(a)\n", "r = angles\n",
    "for j in range(3):\n    t1j = x[j]\n", "x_2j = 3\n", "v = 3.0 * j\n", "v = 3 * j2\n",
    "", "\n\n", "q = 0.5jx\n", "q = 7j\nr = fft\n", "g = x.conjugate()\n",
]


def _random_source(rng: random.Random) -> str:
    words = ["x", "j", "2", "1.", "5j", "fft", "t3", "conj", "angle", "vdot", "complex", "_",
             ".", " ", "\n", "(", ")", "*", "0.5", "j1", "rfft", "np", "a2j", "ff", "tj"]
    return "".join(rng.choice(words) for _ in range(rng.randint(0, 40)))


@pytest.mark.parametrize("source", SOURCES)
def test_the_same_marks_as_one_search(source: str) -> None:
    assert may_be_complex(SimpleNamespace(source=source)) == bool(MARKS.search(source))


def test_random_sources() -> None:
    rng = random.Random(15)
    for _ in range(3000):
        source = _random_source(rng)
        assert may_be_complex(SimpleNamespace(source=source)) == bool(MARKS.search(source)), \
            repr(source)


def test_complex_literal_in_user_code_still_checked() -> None:
    # a complex value made by the user's code reaches a rule written for real values
    # (np.real's adjoint): the gradient is 2x for the real part of (x * 1j) * (x * 1j) = -x**2
    def f(x):
        z = x * 1.0j
        return np.real(np.sum(z * z))

    x = np.array([0.5, -1.25, 2.0])
    np.testing.assert_allclose(adgen.grad(f)(x), -2 * x, rtol=1e-12)
