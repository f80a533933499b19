"""The real parts of a complex array written through its ``.real`` view and read with complex
values (``z.real[...] = a; y = z.real + 1j * b``): the pullback added a complex cotangent into
the view's float64 shadow and failed with NumPy's casting error. The view's adjoint is the
real part of the cotangent (analyses.real_parts). Checked against central differences
(tests/gradcheck.py) under both policies, in a function, a method, a lambda and a loop; the
imaginary parts' view and real parts a helper returns are refused at the user's line."""

import numpy as np
import pytest
from gradcheck import central, check_grad

import adgen

A = np.array([0.5, -1.2, 2.0])
B = np.array([0.3, 0.7, -0.4])


def written_then_read(a, b):
    z = np.zeros(3, dtype=complex)
    z.real[...] = a
    y = z.real + 1j * b
    return np.sum(np.abs(y) ** 2)


def scaled_in_place(a, b):
    z = np.zeros(3, dtype=complex) + 0.5j
    z.real[...] = a
    z.real[1:] *= 2
    y = z.real * (1 + 1j) + 1j * b
    return np.sum(np.abs(y) ** 2) + np.sum(np.abs(z))


def through_np_real(a, b):
    z = np.zeros(3, dtype=complex)
    r = np.real(z)
    r[:] = a ** 2
    c = np.exp(1j * b)
    return np.abs(np.sum(r @ c))


def rows_in_a_loop(a, b):
    z = np.zeros((3, 3), dtype=complex)
    for i in range(3):
        z.real[i] = a * (i + 1)
    y = z.real @ (1j * b) + z.real[:, 0]
    return np.sum(np.abs(y) ** 2)


def set_real(z, v):
    z.real[...] = v


def written_by_a_helper(a, b):
    z = np.zeros(3, dtype=complex) + 1j * b
    set_real(z, a ** 2)
    y = z.real * 1j + z
    return np.sum(np.abs(y) ** 2)


def into_an_argument(z, a):
    z.real[...] = a
    return np.sum(np.abs(z.real - 2j) ** 2)


class Signal:
    def __init__(self, n):
        self.z = np.zeros(n, dtype=complex)

    def power(self, a, b):
        self.z.real[...] = a
        y = self.z.real + 1j * b
        return np.sum(np.abs(y) ** 2)


CASES = [written_then_read, scaled_in_place, through_np_real, rows_in_a_loop,
         written_by_a_helper, lambda a, b: written_then_read(a, b) * scaled_in_place(a, b)]
IDS = ["written_then_read", "scaled_in_place", "np_real", "loop", "helper", "lambda"]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_against_central_differences(f, mutation):
    check_grad(f, (A.copy(), B.copy()), argnums=(0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_method(mutation):
    check_grad(Signal(3).power, (A.copy(), B.copy()), argnums=(0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_complex_argument_written(mutation):
    z = np.array([1.0 + 2.0j, -0.5j, 3.0])
    g = adgen.grad(into_an_argument, argnums=1, mutation=mutation)(z.copy(), A.copy())
    # d/da sum((a - 0)^2 + (Im z - 2)^2) = 2 a
    np.testing.assert_allclose(g, 2 * A, rtol=1e-12)
    kept = z.copy()
    adgen.grad(into_an_argument, argnums=1, mutation=mutation)(kept, A.copy())
    plain = z.copy()
    into_an_argument(plain, A.copy())
    np.testing.assert_array_equal(kept, plain)


def imaginary_parts(a, b):
    z = np.zeros(3, dtype=complex)
    z.imag[...] = a
    y = z.imag + 1j * b
    return np.sum(np.abs(y) ** 2)


def real_parts_of(z):
    return z.real


def real_parts_from_a_helper(a, b):
    z = np.zeros(3, dtype=complex)
    r = real_parts_of(z)
    r[...] = a
    y = r + 1j * b
    return np.sum(np.abs(y) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f, line, says", [
    (imaginary_parts, "y = z.imag + 1j * b", "imaginary parts (z.imag)"),
    (real_parts_from_a_helper, "y = r + 1j * b", "did not see as them"),
], ids=["imag", "helper_result"])
def test_refused_at_the_line(f, line, says, mutation):
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(f, mutation=mutation)(A.copy(), B.copy())
    text = str(info.value)
    assert "test_real_part_views.py" in text and line in text and says in text


@pytest.mark.parametrize("f", CASES + [Signal(3).power], ids=IDS + ["method"])
def test_forward_mode(f):
    d = np.array([0.7, -0.2, 1.3])
    _, tangent = adgen.jvp(f, (A.copy(), B.copy()), (d, np.zeros(3)))
    expected = central(lambda a: f(a, B.copy()), A.copy()) @ d
    assert tangent == pytest.approx(float(expected), rel=1e-6)


def test_second_derivatives():
    def f(a):
        return written_then_read(a, B.copy())

    g = adgen.grad(f)
    expected = np.array([central(lambda a: g(a)[i], A.copy()) for i in range(3)])
    for op in (adgen.hessian(f), adgen.jacrev(adgen.grad(f)), adgen.jacfwd(adgen.grad(f))):
        np.testing.assert_allclose(op(A.copy()), expected, atol=1e-5)
