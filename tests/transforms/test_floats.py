"""Typed tapes: a counted loop's float64 and int records kept in typed arrays
(transforms/analyses/floats.py, Plan.counted, runtime.tape_columns / reversed_rows).

The analysis is checked on its own (which names hold float64 numbers or ints, and which do not
although NumPy's promotion makes them look alike: a float32, a power of Python floats, an
int array's element), then through grad under both policies: each loop below is compared
with central differences, and the generated code is checked for whether it took the typed
tape, so a test of a fallback cannot pass by taking the new path and the other way round.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from adgen.transforms import front, pipeline
from adgen.transforms.analyses.floats import column_dtypes
from adgen.transforms.analyses.kinds import NUMBER, kinds, param_kind, signature

import adgen
from tests.gradcheck import check_grad

POLICIES = ["save", "strict"]


def _columns(fn, *args):
    parsed, tree, _namer, _headers = front.front(fn)
    def resolve(node):
        return front.resolve(parsed, node)

    sig = signature(args)
    params = [a.id for a in tree.args.args]
    known = kinds(tree, {p: param_kind(k) for p, k in zip(params, sig)}, resolve)
    return column_dtypes(tree, known, {p for p, k in zip(params, sig) if type(k) is int},
                         resolve)


def _floats(fn, *args):
    return {n for n, d in _columns(fn, *args).items() if d == "float64"}


def _source(fn, *args):
    return adgen.source(fn, *args)


def _grad_under(mutation):
    return functools.partial(adgen.grad, mutation=mutation)


# ---------------------------------------------------------------------------------------------
# the analysis


def scalars(x, w, k):
    e = x[0]  # an element of a float64 array
    a = e * w  # with a number of any real type: float64
    b = np.tanh(a)
    c = 2.0 * 3  # Python floats and ints
    d = w * 2.0  # w may be a float32: float32 * 2.0 is a float32
    p = c ** 0.5  # a Python power may be complex
    q = e ** w  # a NumPy float64 power is not
    r = np.add(k, 1)  # ints: an int
    s = np.sqrt(c)
    t = x.sum()
    u = len(x)
    v = float(u)
    return a + b + c + d + p + q + r + s + t + u + v


def test_float64_numbers_and_ints():
    columns = _columns(scalars, np.linspace(0.1, 1.0, 4), 0.5, 3)
    got = {n for n, d in columns.items() if d == "float64"}
    assert {"e", "a", "b", "c", "q", "s", "t", "v"} <= got
    assert not {"d", "p", "r", "u", "w", "k", "x"} & got
    assert {n for n, d in columns.items() if d == "int64"} == {"u"}  # k may be a np.int32


def test_arrays_of_other_dtypes_give_no_float64_elements():
    assert "e" not in _floats(scalars, np.linspace(0.1, 1.0, 4).astype(np.float32), 0.5, 3)
    assert "e" not in _floats(scalars, np.arange(4), 0.5, 3)


def allocated(x, n):
    h = np.empty(n)
    g = np.zeros(n, dtype=int)
    f = np.ones_like(x)
    a = h[0]
    b = g[0]
    c = f[1] + (h * 2)[0]
    return a + b + c


def test_allocations_without_a_dtype_are_float64():
    got = _floats(allocated, np.zeros(3, dtype=np.float32), 3)
    assert "a" in got and "b" not in got and "c" not in got  # ones_like a float32: float32
    assert "c" in _floats(allocated, np.zeros(3), 3)


def test_signature_tells_float64_arrays_apart():
    x64, x32, xi = np.zeros(3), np.zeros(3, dtype=np.float32), np.zeros(3, dtype=np.int64)
    assert signature((x64,)) == (1,)
    assert signature((x32,)) != signature((x64,)) != signature((xi,))
    assert param_kind(signature((x32,))[0]) == 1 == param_kind(signature((xi, 1.0))[0])
    assert param_kind(signature((xi, 1.0))[1]) == NUMBER
    assert signature((x64.byteswap().view(x64.dtype.newbyteorder()),)) != (1,)


# ---------------------------------------------------------------------------------------------
# which loops take a float tape


def fill(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        # tanh's output is taped (stored as it is, the pullback would read it from h again:
        # reverse_final.final_store)
        h[i] = 2.0 * np.tanh(x[i] * w)
    return np.sum(h * h)


def product(x, w):
    s = 1.0  # a Python float, then NumPy float64s
    for _ in range(3):
        s = s * w + x[0]
    return s


def offset(x, w):
    n = len(x)
    h = np.zeros(n)
    for i in range(2, n):
        # the row of i is i - 2 (tanh's output is taped: x[i] * w alone would be computed
        # again by the pullback, values_again.final_value)
        h[i] = np.sin(np.tanh(x[i]) * w)
    return np.sum(h ** 2)


def index_only(x, w):
    n = len(x)
    h = np.zeros(n)
    for i in range(n):
        h[i] = x[i] + w  # the pullback reads no value of the iteration
    return np.sum(h * h)


def with_break(x, w):
    s = 0.0
    for i in range(len(x)):
        s = s + np.tanh(x[i] * w)
        if s > 1.0:
            break
    return s


def nested(x, w):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            # (tanh of the carried sum: a row recomputed_rows cannot compute again)
            s = s + np.tanh(x[i] * x[j] * w + 0.1 * s)
    return s


def int_record(x, w):
    n = len(x)
    h = np.zeros(n)
    for i in range(2, n):
        # records max(i - 2, 0), an int, and tanh's output (i - 2 alone, and x[i] * w,
        # would be computed again by the pullback: values_again.final_value)
        h[i] = np.tanh(x[i] * w) * x[max(i - 2, 0)]
    return np.sum(h ** 2)


def scan(x, w):
    n = len(x)
    c = np.empty(n)
    c[0] = x[0]
    for i in range(1, n):
        c[i] = np.tanh(w * c[max(i - 1, 0)]) + x[i]  # an int record (not i - 1: final_value)
    return np.sum(c * c)


def object_record(x, w):
    s = 0.0
    for i in range(len(x)):
        # an array, not a number (tanh's output: a view of x would be read again by the
        # pullback, values_again.final_value)
        r = np.tanh(x[i:i + 2])
        s = s + np.sum(r * w)
    return s


def conditional(x, w):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            s = s + np.exp(x[i] * w)
    return s


TAKEN = [fill, product, offset, int_record, scan]
NOT_TAKEN = [with_break, nested, conditional, object_record]


@pytest.mark.parametrize("f", TAKEN, ids=lambda f: f.__name__)
def test_float_tape_taken(f):
    src = _source(f, np.linspace(-1.0, 1.0, 6), 0.7)
    assert "tape_columns(" in src and "reversed_rows(" in src
    assert ".append(" not in src


@pytest.mark.parametrize("f", [int_record, scan], ids=lambda f: f.__name__)
def test_int_records_take_an_int64_column(f):
    src = _source(f, np.linspace(-1.0, 1.0, 6), 0.7)
    assert "'int64'" in src and "'float64'" in src


def test_a_loop_recording_only_its_index_needs_no_tape():
    src = _source(index_only, np.linspace(-1.0, 1.0, 6), 0.7)
    assert "for i in reversed(range(n))" in src
    assert "tape" not in src


@pytest.mark.parametrize("f", NOT_TAKEN, ids=lambda f: f.__name__)
def test_float_tape_not_taken(f):
    src = _source(f, np.linspace(-1.0, 1.0, 6), 0.7)
    assert "tape_columns(" not in src and ".append(" in src


def test_float_tape_not_taken_for_float32_or_generic_code():
    assert "tape_columns(" not in _source(fill, np.linspace(-1.0, 1.0, 6, dtype=np.float32),
                                           0.7)
    assert "tape_columns(" not in _source(fill)


# ---------------------------------------------------------------------------------------------
# gradients


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", TAKEN + [index_only] + NOT_TAKEN, ids=lambda f: f.__name__)
def test_gradients(f, mutation):
    x = np.array([0.3, -0.8, 0.5, 1.1, -0.2, 0.9])
    check_grad(f, (x, 0.7), argnums=(0, 1), grad=_grad_under(mutation))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("w", [np.float32(0.7), np.float64(0.7), 2], ids=type)
def test_scalar_types_of_the_factor(w, mutation):
    # a float32 or int w still gives float64 numbers with a float64 x (a float32 w with a
    # Python float would not: product's s starts as 1.0 and s * w is a float64 only after)
    x = np.array([0.3, -0.8, 0.5, 1.1])
    for f in (fill, product):
        check_grad(f, (x, w), argnums=0, grad=_grad_under(mutation))
    check_grad(fill, (x, float(w)), argnums=(0, 1), grad=_grad_under(mutation))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_short_and_empty_ranges(n, mutation):
    x = np.linspace(-1.0, 1.0, n)
    if n:
        check_grad(fill, (x, 0.7), argnums=(0, 1), grad=_grad_under(mutation))
        check_grad(offset, (x, 0.7), argnums=(0, 1), grad=_grad_under(mutation))
    g = adgen.grad(fill, argnums=(0, 1), mutation=mutation)(x, 0.7)
    assert g[0].shape == (n,) and (n > 0 or g[1] == 0.0)


def test_values_are_the_tuple_tapes_bit_for_bit():
    # the float tape reads back the numbers the forward computed: the specialised gradient
    # equals the generic one (tuple tape) exactly
    x = np.linspace(-1.3, 1.7, 50)
    for f in (fill, offset, product):
        special = adgen.grad(f, argnums=(0, 1))(x.copy(), 0.7)
        generic = pipeline.compile_function(f, wrt=(0, 1))
        _out, saved = generic.forward(x.copy(), 0.7)
        gx, gw = generic.pullback(saved, 1.0)
        np.testing.assert_array_equal(special[0], gx)
        assert special[1] == gw


def test_the_pullback_runs_twice():
    x = np.linspace(-1.0, 1.0, 5)
    _out, pb = adgen.vjp(fill, x, 0.7)
    first = pb(1.0)
    second = pb(2.0)
    np.testing.assert_allclose(second[0], 2.0 * first[0], rtol=1e-14)
    np.testing.assert_allclose(second[1], 2.0 * first[1], rtol=1e-14)


def over_elements(x, w):
    h = np.multiply(x, w, out=np.empty(len(x)))
    s = 0.0
    for v in h:  # loop_sequence(h): the array as it is
        s += np.tanh(v)
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_loops_over_elements_and_out_results(mutation):
    x = np.array([0.3, -0.8, 0.5, 1.1])
    assert "tape_columns(" in _source(over_elements, x, 0.7)
    check_grad(over_elements, (x, 0.7), argnums=(0, 1), grad=_grad_under(mutation))


def taylor_exp(x, w):
    s = 0.0
    fact = 1
    for i in range(1, 25):  # 21! passes 2 ** 63
        fact = fact * i
        s = s + (x[0] * w) ** i / fact
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_int_products_are_not_int64_columns(mutation):
    src = _source(taylor_exp, np.array([0.3, 0.2]), 0.7)
    assert "'int64'" not in src  # fact is recorded as it is, an int of any size
    x = np.array([0.3, 0.2])
    g = adgen.grad(taylor_exp, argnums=(0, 1), mutation=mutation)(x.copy(), 0.7)
    np.testing.assert_allclose(g[0], [0.7 * np.exp(0.21), 0.0], rtol=1e-12)
    np.testing.assert_allclose(g[1], 0.3 * np.exp(0.21), rtol=1e-12)


def huge_counter(x, w):
    s = 0.0
    for i in range(2 ** 63, 2 ** 63 + 3):  # i + 1 does not fit int64
        s = s + x[0] * w * (i + 1)
    return s


def loop_carried_int(x, w):
    s = 0.0
    k = 0
    for i in range(4):
        k = k + i + 1000  # bound twice (a loop header): not an int64 column
        s = s + x[i % 3] * k * w
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_ints_beyond_int64_are_recorded_exactly(mutation):
    # a raw OverflowError from generated code before: the column is now of Python ints
    x = np.array([0.3, 0.2, -0.1])
    g = adgen.grad(huge_counter, argnums=(0, 1), mutation=mutation)(x.copy(), 0.5)
    want = sum(float(i + 1) for i in range(2 ** 63, 2 ** 63 + 3))  # hand-derived
    np.testing.assert_allclose(g[0], [0.5 * want, 0.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(g[1], 0.3 * want, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_loop_carried_ints_are_not_int64_columns(mutation):
    x = np.array([0.3, 0.2, -0.1])
    assert "tape_columns(" not in _source(loop_carried_int, x, 0.5)  # k: the tuple tape
    check_grad(loop_carried_int, (x, 0.5), argnums=(0, 1), grad=_grad_under(mutation))


SCALE = 0.5
SCALE32 = np.float32(0.5)


def filled(x, w):
    R = np.full(3, np.pi)
    Q = np.full(3, 1)  # an int64 array
    S = np.full(3, w)  # w's dtype: unknown
    a = R[0] * SCALE
    b = Q[0] * SCALE
    c = S[0]
    d = max(a, R[1])
    e = SCALE32 * x[0]
    f = SCALE * w
    return a + b + c + d + e + f


def test_full_free_floats_and_max():
    """np.full of a float is a float64 array, of an int or a parameter not; a global Python
    float is a float (its binding's guard holds its type), a global float32 not; max of two
    float64 numbers is one of them."""
    got = _floats(filled, np.zeros(3), 0.5)
    assert {"a", "d"} <= got
    # Q[0] is an element of an int64 array, S[0] of an array of w's type, SCALE * w a Python
    # float times a number of any type (a float32 w gives a float32): none is claimed
    assert not {"b", "c", "f"} & got
    check_grad(filled, (np.array([0.3, 0.1, 0.2]), 0.5), argnums=(0, 1))
