"""The bad-input catalogue (issue 5): each case gives a clear adgen error — a subclass of
``adgen.AdgenError`` whose message names the file and line where there is one — or a documented
result. Never a raw traceback from generated code.

Decisions recorded here (the compiler matches them):
- Differentiating an argument with no float or complex content (int, bool, str, None, object(),
  an int or bool array) raises NonDifferentiableError. vjp does not raise: such an argument gets
  the cotangent None (tests/test_api.py).
- A function without Python source is differentiable when the rule registry has a rule for it
  (``adgen.grad(np.sin)`` works); without a rule it raises MissingRuleError naming it.
- NaN and inf inputs are not errors: the gradient is what the arithmetic of the derivative
  gives (NaN propagates, d sqrt(x)/dx at 0 is inf). An exception the plain call raises (e.g.
  math.log(0.0) -> ValueError) is raised unchanged.
- An exception raised by the user's code during the forward pass passes through unchanged: same
  type, same args, not wrapped in an AdgenError.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import re

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_vjp

import adgen

THIS_FILE = os.path.abspath(__file__)


def _line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``# BAD:<marker>``."""
    with open(THIS_FILE) as fh:
        for number, text in enumerate(fh, start=1):
            if text.rstrip().endswith(f"# BAD:{marker}"):
                return number
    raise LookupError(marker)


def _assert_located(err: BaseException, markers: list[str]) -> None:
    """The error is an adgen error naming this file, the line of one of ``markers`` and that
    line's source text."""
    assert isinstance(err, adgen.AdgenError), f"not an AdgenError: {type(err).__name__}: {err}"
    message = str(err)
    name = re.escape(os.path.basename(THIS_FILE))
    lines = [_line_of(m) for m in markers]
    found = [ln for ln in lines if re.search(rf"{name}:{ln}\b", message)]
    assert found, f"expected {os.path.basename(THIS_FILE)}:<one of {lines}> in:\n{message}"
    with open(THIS_FILE) as fh:
        source = fh.readlines()[found[0] - 1].split("  # BAD:")[0].strip()
    assert source in message, f"the source line {source!r} is not in:\n{message}"


# ============================================================================================
# Arguments without a gradient


def ignores_first(x, y):
    return y * y


@pytest.mark.parametrize("bad, word", [
    (3, "int"),
    (True, "bool"),
    ("abc", "str"),
    (np.int64(3), "int"),
    (np.arange(3), "int"),
    (np.array([True, False]), "bool"),
    (None, None),
    (object(), None),
], ids=["int", "bool", "str", "np.int64", "int-array", "bool-array", "None", "object"])
def test_argument_without_float_content(bad, word):
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(ignores_first)(bad, 2.0)
    if word is not None:
        assert word in str(info.value)
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.value_and_grad(ignores_first, argnums=(1, 0))(bad, 2.0)


def square(x):
    return x * x


def test_int_argument_suggests_a_float():
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(square)(3)
    assert "float" in str(info.value)
    # The same call with a float is fine.
    assert adgen.grad(square)(3.0) == pytest.approx(6.0)


def test_int_argument_not_in_argnums_is_fine():
    def power(x, n):
        return x ** n

    assert adgen.grad(power)(2.0, 3) == pytest.approx(12.0)
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.grad(power, argnums=1)(2.0, 3)


def test_complex_scalar_to_vjp_is_differentiated():
    # complex arguments follow JAX (tests/test_complex_arguments.py): for a holomorphic f
    # and a cotangent u, the cotangent is u f'(z) = 1.0 * 2 (1 + 1j)
    _, pullback = adgen.vjp(square, 1.0 + 1.0j)
    assert pullback(1.0) == (2.0 + 2.0j,)


# ============================================================================================
# Functions without source

_made_by_exec: dict = {}
exec("def made_by_exec(x):\n    return x * 2.0\n", _made_by_exec)  # noqa: S102
made_by_exec = _made_by_exec["made_by_exec"]


def test_function_made_by_exec_without_rule():
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(made_by_exec)(1.0)
    assert "made_by_exec" in str(info.value)
    assert "rrule" in str(info.value)  # says what to do


def calls_made_by_exec(x):
    return made_by_exec(x) + x  # BAD:exec-callee


def test_callee_made_by_exec_without_rule_names_the_call_site():
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(calls_made_by_exec)(1.0)
    assert "made_by_exec" in str(info.value)
    _assert_located(info.value, ["exec-callee"])


_WEIGHTS = np.array([1.0, 2.0])


def calls_an_array(x):
    return np.sum(_WEIGHTS(x))  # BAD:array-called


def test_calling_a_global_array_is_an_adgen_error():
    # resolving the call target compared an array with NumPy functions by ==, which raised
    # NumPy's "truth value of an array is ambiguous" as an internal CompilerError
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(calls_an_array)(np.ones(2))
    assert not isinstance(info.value, adgen.CompilerError)
    assert "_WEIGHTS" in str(info.value)
    _assert_located(info.value, ["array-called"])

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))


def test_c_function_callee_without_rule_names_it_and_the_call_site():
    c_sqrt = _LIBM["sqrt"]  # a fresh ctypes object, no rule
    c_sqrt.restype = ctypes.c_double
    c_sqrt.argtypes = [ctypes.c_double]

    def calls_c(x):
        return c_sqrt(x) * x  # BAD:c-callee

    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(calls_c)(4.0)
    assert "sqrt" in str(info.value)
    _assert_located(info.value, ["c-callee"])


def test_numpy_method_without_rule_names_it_and_the_line():
    def pickled(x):
        z = x.dumps()  # BAD:method
        return z[0] * z[1]

    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(pickled)(np.array([0.3, 0.8, -0.4]))
    # NumPy has no np.dumps: the hint does not send the user to it (x.tolist() had no rule
    # either until 236c01f)
    assert "ndarray.dumps" in str(info.value) and "np.dumps" not in info.value.hint
    assert "rrule" in info.value.hint
    _assert_located(info.value, ["method"])


class _Accumulator:
    def __init__(self):
        self.buf = np.zeros(3)

    def add(self, v):
        self.buf += v
        return self.buf


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_method_writing_its_object_in_place(mutation):
    # refused at the call until session 22 (H2's d8b51c3 follows methods writing arrays of an
    # object the function builds): d/dx sum(sin(x) ** 2) = 2 sin(x) cos(x)
    def accumulate(x):
        a = _Accumulator()
        y = a.add(np.sin(x))
        return np.sum(y ** 2)

    x = np.array([0.3, 0.8, -0.4])
    np.testing.assert_allclose(adgen.grad(accumulate, mutation=mutation)(x),
                               2.0 * np.sin(x) * np.cos(x), rtol=1e-12)


def _rebinds_then_raises(x):
    a = x * 1.0
    try:  # BAD:partial-try
        a = x * 2.0
        b = 1.0 / (x - x)
    except ZeroDivisionError:
        b = 0.0
    return a + b


def _writes_then_raises(x):
    y = x * 1.0
    z = np.sin(y)
    try:  # BAD:partial-try-write
        y[0] = 5.0
        raise ValueError
    except ValueError:
        y[1] = 6.0
    return np.sum(z) + np.sum(y)


@pytest.mark.parametrize("fn, marker, arg", [
    (_rebinds_then_raises, "partial-try", 0.5),
    (_writes_then_raises, "partial-try-write", np.array([0.3, 0.8, -0.4]))])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_try_block_cut_short_after_a_lasting_statement_is_refused(fn, marker, arg, mutation):
    # both gave a wrong result before: SSA handed the handler's path the values from before
    # the try, and the pullback undid the handler only
    with pytest.raises((adgen.UnsupportedError, adgen.MutationError)) as info:
        adgen.value_and_grad(fn, mutation=mutation)(arg)
    if isinstance(info.value, adgen.UnsupportedError):
        assert "raised after some of its statements had run" in str(info.value)
        _assert_located(info.value, [marker])


def _raises_at_once(x):
    try:
        r = x / (x - x)  # the temporary x - x ran, but nothing outlives the body
    except ZeroDivisionError:
        r = x * 3.0
    return r


def test_a_try_block_that_raises_before_anything_lasting_ran_is_differentiated():
    value, g = adgen.value_and_grad(_raises_at_once)(0.5)
    assert value == 1.5 and g == 3.0


def test_builtin_without_rule_as_the_function():
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(len)([1.0, 2.0])
    assert "len" in str(info.value)


def test_numpy_function_with_a_rule_is_differentiable_directly():
    # np.sin has no Python source but has a rule: the rule is used.
    g = adgen.grad(np.sin)(1.0)
    assert g == pytest.approx(math.cos(1.0), rel=1e-12)
    check_grad(np.sin, (0.4,))
    check_vjp(np.tanh, (np.array([0.3, -1.2, 2.0]),))


def test_inactive_builtin_call_needs_no_rule():
    # len, range, isinstance and int() see no differentiable value: no rule is needed.
    def f(x):
        n = len(x)
        if isinstance(n, int) and int(n) > 2:
            return np.sum(x ** 2) / n
        return np.sum(x)

    check_grad(f, (np.array([0.5, -1.0, 2.0]),))


# ============================================================================================
# Unsupported constructs: UnsupportedError with file, line and source line


def uses_generator(x):
    y = x * 2.0
    yield y  # BAD:yield


def uses_yield_from(x):
    yield from [x, x * 2.0]  # BAD:yield-from


async def uses_async(x):  # BAD:async
    return x * 2.0


async def uses_await(x):  # BAD:await-def
    y = await _coro(x)  # BAD:await
    return y


async def _coro(x):
    return x


_GLOBAL_STATE = 0.0


def writes_global(x):
    global _GLOBAL_STATE  # BAD:global
    _GLOBAL_STATE = x  # BAD:global-write
    return x * 2.0


def _make_nonlocal_writer():
    total = 0.0

    def writes_nonlocal(x):
        nonlocal total  # BAD:nonlocal
        total = total + x  # BAD:nonlocal-write
        return total * x

    return writes_nonlocal


writes_nonlocal = _make_nonlocal_writer()


def calls_exec(x):
    exec("z = 1")  # noqa: S102  # BAD:exec
    return x * 2.0


def calls_eval(x):
    return eval("x * 2.0") + x  # BAD:eval


def calls_bad_callee(x):
    return writes_global(x) + 1.0


UNSUPPORTED = [
    (uses_generator, ["yield"]),
    (uses_yield_from, ["yield-from"]),
    (uses_async, ["async"]),
    (uses_await, ["await-def", "await"]),
    (writes_global, ["global", "global-write"]),
    (writes_nonlocal, ["nonlocal", "nonlocal-write"]),
    (calls_exec, ["exec"]),
    (calls_eval, ["eval"]),
    (calls_bad_callee, ["global", "global-write"]),  # the error names the callee's line
]


@pytest.mark.parametrize("fn, markers", UNSUPPORTED, ids=[f.__name__ for f, _ in UNSUPPORTED])
def test_unsupported_construct(fn, markers):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(fn)(1.5)
    _assert_located(info.value, markers)


@pytest.mark.parametrize("fn, markers", UNSUPPORTED[:3], ids=[f.__name__ for f, _ in
                                                              UNSUPPORTED[:3]])
def test_unsupported_construct_through_vjp_and_source(fn, markers):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.vjp(fn, 1.5)
    _assert_located(info.value, markers)
    with pytest.raises(adgen.UnsupportedError):
        adgen.source(fn)


def uses_with(x):
    with np.errstate(divide="ignore"):  # BAD:with
        y = np.log(x) * x
    return np.sum(y)


def test_with_statement_is_supported_or_refused_clearly():
    x = np.array([0.5, 2.0])
    try:
        g = adgen.grad(uses_with)(x.copy())
    except adgen.UnsupportedError as err:
        _assert_located(err, ["with"])
    else:
        assert_grad_close(g, np.log(x) + 1.0, rtol=1e-10)


# ============================================================================================
# argnums


def two(x, y):
    return x * y


@pytest.mark.parametrize("argnums", [2, -3, 5, (0, 2), (-3,), "0", 0.5, (0, "1"), (), None,
                                     True], ids=repr)
def test_bad_argnums(argnums):
    with pytest.raises(adgen.ArgnumsError) as info:
        adgen.grad(two, argnums=argnums)(1.0, 2.0)
    assert isinstance(info.value, adgen.AdgenError)
    with pytest.raises(adgen.ArgnumsError):
        adgen.value_and_grad(two, argnums=argnums)(1.0, 2.0)


# ============================================================================================
# Outputs grad cannot differentiate


def returns_vector(x):
    return np.array([x, x * x, 3.0 * x])


def returns_matrix(x):
    return np.ones((2, 2)) * x


def returns_tuple(x):
    return x, x * x


def returns_list(x):
    return [x * 2.0]


def returns_str(x):
    return "x"


def returns_none(x):
    y = x * 2.0  # noqa: F841


def returns_complex(x):
    return x * (1.0 + 2.0j)


@pytest.mark.parametrize("fn", [returns_vector, returns_matrix, returns_tuple, returns_list,
                                returns_str, returns_none],
                         ids=lambda f: f.__name__)
def test_non_scalar_output(fn):
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(fn)(1.5)
    if fn in (returns_vector, returns_matrix):
        assert "vjp" in str(info.value)
        assert "shape" in str(info.value)
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.value_and_grad(fn)(1.5)


def test_vector_output_works_through_vjp():
    check_vjp(returns_vector, (1.5,))


def test_has_aux_without_a_pair():
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.grad(square, has_aux=True)(1.5)


# ============================================================================================
# NaN and inf: the gradient is what the derivative's arithmetic gives; no error


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_input_propagates():
    # d(x*x)/dx = 2x = nan at nan
    g = adgen.grad(square)(float("nan"))
    assert isinstance(g, float) and math.isnan(g)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_inf_input():
    # d(x*x)/dx = 2x = inf at inf
    assert adgen.grad(square)(float("inf")) == math.inf
    # d exp(x)/dx = exp(x) = 0 at -inf
    assert adgen.grad(exp_of)(-math.inf) == 0.0


def exp_of(x):
    return np.exp(x)


def dot(x, y):
    return np.sum(x * y)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_and_inf_in_arrays():
    x = np.array([1.0, np.inf, np.nan, -2.0])
    y = np.array([0.5, 2.0, 3.0, 1.0])
    # d/dy sum(x * y) = x, entry by entry: inf and nan stay where they are
    gy = adgen.grad(dot, argnums=1)(x.copy(), y.copy())
    np.testing.assert_array_equal(gy, x)
    # d/dx = y, finite everywhere even where x is not
    gx = adgen.grad(dot)(x.copy(), y.copy())
    np.testing.assert_array_equal(gx, y)


def sqrt_sum(x):
    return np.sum(np.sqrt(x))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_derivative_infinite_at_a_point():
    # d sqrt(x)/dx = 1 / (2 sqrt(x)): inf at 0
    g = adgen.grad(sqrt_sum)(np.array([0.0, 4.0]))
    assert g[0] == np.inf
    assert g[1] == pytest.approx(0.25, rel=1e-12)


def branch_on(x):
    if x > 0.0:
        return x * 3.0
    return x * x


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_in_control_flow_takes_the_arm_python_takes():
    # nan > 0.0 is False: the second arm runs, gradient 2x = nan
    assert math.isnan(adgen.grad(branch_on)(float("nan")))
    assert adgen.grad(branch_on)(math.inf) == 3.0


def log_of(x):
    return math.log(x)


def test_math_domain_error_is_the_plain_calls_error():
    with pytest.raises(ValueError) as plain:
        log_of(0.0)
    with pytest.raises(ValueError) as info:
        adgen.grad(log_of)(0.0)
    assert not isinstance(info.value, adgen.AdgenError)
    assert info.value.args == plain.value.args


# ============================================================================================
# The user's exceptions pass through unchanged


class ModelError(Exception):
    pass


def checked(x):
    if x > 3.0:
        raise ModelError(f"too big: {x}", 42)
    return x * x


def calls_checked(x):
    return checked(x * 2.0) + x


@pytest.mark.parametrize("fn", [checked, calls_checked], ids=lambda f: f.__name__)
def test_user_exception_passes_through(fn):
    with pytest.raises(ModelError) as info:
        adgen.grad(fn)(5.0)
    assert type(info.value) is ModelError
    expected_args = ("too big: 10.0", 42) if fn is calls_checked else ("too big: 5.0", 42)
    assert info.value.args == expected_args
    with pytest.raises(ModelError):
        adgen.vjp(fn, 5.0)
    with pytest.raises(ModelError):
        adgen.value_and_grad(fn)(5.0)
    # and the next call, without the error, is right (no state left behind)
    check_grad(fn, (1.0,))


def singular_solve(a, b):
    return np.sum(np.linalg.solve(a, b))


def test_numpy_exception_passes_through():
    with pytest.raises(np.linalg.LinAlgError) as info:
        adgen.grad(singular_solve)(np.zeros((2, 2)), np.ones(2))
    assert not isinstance(info.value, adgen.AdgenError)


# ============================================================================================
# Malformed rules: RuleError naming the rule


def test_rule_with_too_few_cotangents():
    def two_arg_primal(x, y):
        return x * y

    @adgen.rrule(two_arg_primal)
    def _(x, y):
        return x * y, lambda g: (g * y,)  # one cotangent for two arguments

    def uses(x, y):
        return two_arg_primal(x, y) + x

    with pytest.raises(adgen.RuleError) as info:
        adgen.grad(uses, argnums=(0, 1))(2.0, 3.0)
    assert "two_arg_primal" in str(info.value)
    with pytest.raises(adgen.RuleError) as info:
        adgen.vjp(two_arg_primal, 2.0, 3.0)[1](1.0)
    assert "two_arg_primal" in str(info.value)


def test_rule_with_too_many_cotangents():
    def one_arg_primal(x):
        return x * 3.0

    @adgen.rrule(one_arg_primal)
    def _(x):
        return x * 3.0, lambda g: (g * 3.0, g)

    def uses(x):
        return one_arg_primal(x) * x

    with pytest.raises(adgen.RuleError) as info:
        adgen.grad(uses)(2.0)
    assert "one_arg_primal" in str(info.value)


def test_rule_returning_a_bare_value_for_two_arguments():
    def pair_primal(x, y):
        return x + y

    @adgen.rrule(pair_primal)
    def _(x, y):
        return x + y, lambda g: g  # not a tuple of two cotangents

    def uses(x, y):
        return pair_primal(x, y) * 2.0

    with pytest.raises(adgen.RuleError) as info:
        adgen.grad(uses, argnums=(0, 1))(2.0, 3.0)
    assert "pair_primal" in str(info.value)


def test_rule_with_a_wrong_shape():
    def vector_primal(x):
        return np.sum(x ** 2)

    @adgen.rrule(vector_primal)
    def _(x):
        return vector_primal(x), lambda g: (np.ones(2) * g,)  # x has shape (3,)

    def uses(x):
        return vector_primal(x) + np.sum(x)

    with pytest.raises(adgen.RuleError) as info:
        adgen.grad(uses)(np.array([1.0, 2.0, 3.0]))
    message = str(info.value)
    assert "vector_primal" in message
    assert "(2,)" in message and "(3,)" in message


def test_rule_with_an_array_for_a_float():
    def float_primal(x):
        return x * 2.0

    @adgen.rrule(float_primal)
    def _(x):
        return x * 2.0, lambda g: (np.ones(3) * g,)  # x is a float

    def uses(x):
        return float_primal(x) + x

    with pytest.raises(adgen.RuleError) as info:
        adgen.grad(uses)(2.0)
    assert "float_primal" in str(info.value)


def test_rule_whose_signature_does_not_fit_the_primal():
    def unary_primal(x):
        return x

    with pytest.raises(adgen.RuleError) as info:
        @adgen.rrule(unary_primal)
        def _(x, y):
            return x, lambda g: (g, g)

    assert "unary_primal" in str(info.value)


def test_correct_rule_is_accepted():
    # The other side of the tests above: a well-formed rule works.
    def good_primal(x, y):
        return x * y

    @adgen.rrule(good_primal)
    def _(x, y):
        return x * y, lambda g: (g * y, g * x)

    def uses(x, y):
        return good_primal(x, y) + x

    check_grad(uses, (2.0, 3.0), (0, 1))


def test_grad_of_a_complex_output_is_refused_as_in_jax():
    # which real function of the complex output is meant? (JAX: holomorphic=True)
    with pytest.raises(adgen.NonDifferentiableError, match="complex") as info:
        adgen.grad(returns_complex)(1.5)
    assert "np.real" in info.value.hint and "adgen.vjp" in info.value.hint


# Complex values inside a real function differentiate (JAX's convention): tests/rules/
# test_complex.py checks them against central differences.


def abs_of_sum_with(x, c):
    return np.abs(np.sum(x + c))


def test_a_complex_argument_not_differentiated_is_accepted():
    # |sum(x) + 2j| = sqrt(s^2 + 4) with s = sum(x) = 3: each d/dx_i is s / sqrt(s^2 + 4)
    g = adgen.grad(abs_of_sum_with)(np.ones(3), np.array([2j, 0j, 0j]))
    np.testing.assert_allclose(g, np.full(3, 3.0 / np.sqrt(13.0)), rtol=1e-12)


def test_a_complex_cotangent_of_a_real_argument_gives_its_real_part():
    from adgen.runtime import as_gradient

    np.testing.assert_array_equal(as_gradient(np.array([1.0 + 1.0j]), np.array([1.0])),
                                  np.array([1.0]))
    assert as_gradient(2.0 - 3.0j, 1.5) == 2.0
