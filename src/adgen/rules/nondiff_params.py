"""Which of a rule's non-differentiable parameters (those outside ``rule.diff``) may carry a
derivative harmlessly, and the refusal of a call where one that may not does.

A rule's pullback and jvp give no term to a parameter outside ``rule.diff``: where the
argument there has a derivative (the function's activity says it depends on a differentiated
input), that derivative would be dropped, a silent zero, unless the value cannot have one.
Every non-differentiable parameter of adgen's rules is classified here:

- ``FREE``: derivative-free whatever it is given. An integer, shape, axis, dtype, bool, mask,
  string or function argument (``axis``, ``keepdims``, ``indices``, ``condition``) or one the
  result is piecewise constant in (``np.round``'s ``decimals``, ``pinv``'s ``rcond``, a
  tolerance of ``isclose``): an argument computed from the differentiated inputs (an axis
  ``int(x.shape[0] > 2)``) is fine there, and gets no derivative because none exists.
- ``REFUSED``: the result depends smoothly on the parameter (``np.linalg.norm``'s ``ord``,
  ``np.var``'s ``ddof``) or the parameter takes integers only (``scipy.special.polygamma``'s
  order ``n``: SciPy defines no derivative in it): given an argument with a derivative, the
  call is refused at the user's line (:func:`refuse_active_nondiff`), naming the function,
  the parameter and what to do.

A name in ``FREE_NAMES`` is free in every rule that has it, unless ``REFUSED`` names it for
that rule; a parameter of a rule neither lists (a user's rule, or a new one of adgen's) is
refused when it carries a derivative: tests/rules/test_nondiff_params.py fails on an
unclassified parameter of adgen's own rules.
"""

from __future__ import annotations

from typing import Any, Callable

# derivative-free in every rule that takes them (ints, shapes, axes, dtypes, flags, strings,
# masks, index arrays, functions, and adgen's own generated-code helpers' shapes and likes)
FREE_NAMES = frozenset({
    "axis", "axes", "axis1", "axis2", "keepdims", "dtype", "shape", "s", "norm", "k",
    "indices", "index", "order", "copy", "subok", "requirements", "equal_nan", "hermitian",
    "overwrite_input", "method", "deg", "condition", "optimize", "offset", "decimals",
    "UPLO", "max_line_width", "precision", "suppress_small", "ndigits", "key", "reverse",
    "num", "endpoint", "args", "subscripts", "source", "destination", "shift",
    "full_matrices", "compute_uv", "mode", "repeats", "kth", "right", "assume_unique",
    "invert", "to", "casting", "einsum_call", "ufunc", "start", "window_shape", "trim",
    "which", "like", "kind", "seq", "tree", "cls", "concatenator", "extreme",
})

# (rule name, parameter) pairs free for that rule alone, and why
FREE = {
    # the results are booleans: no derivative in anything
    ("numpy.isclose", "rtol"): "a boolean result",
    ("numpy.isclose", "atol"): "a boolean result",
    ("numpy.allclose", "rtol"): "a boolean result",
    ("numpy.allclose", "atol"): "a boolean result",
    # a cutoff on the singular values: the result is piecewise constant in it
    ("numpy.linalg.pinv", "rcond"): "a cutoff (piecewise constant)",
    ("numpy.linalg.matrix_rank", "tol"): "an integer result",
    # integers only (NumPy refuses a float n)
    ("numpy.diff", "n"): "an integer count",
    ("numpy.fft.fft", "n"): "an integer length",
    ("numpy.fft.ifft", "n"): "an integer length",
    ("numpy.fft.rfft", "n"): "an integer length",
    ("numpy.fft.irfft", "n"): "an integer length",
    # c / x with c a number written in the code: a constant by construction
    ("adgen.scaled_reciprocal", "c"): "a constant written in the code",
    # the softmax of x, read instead of recomputed; x's derivative covers it
    ("adgen.log_softmax", "p"): "softmax(x), whose derivative x's term includes",
    # only the shape of a is read
    ("numpy.full_like", "a"): "only its shape is read",
    # x.view(type=np.ndarray): the class of the view
    ("numpy.ndarray.view", "type"): "a class",
    # adgen's generated-code helpers: the values read choose between terms (ties of max and
    # min, the sorted order, an int exponent, a zero norm) or give a layout
    ("adgen.rules.helpers_linalg.nonzero_norm_vjp", "n"): "tests the norm for zero",
    ("adgen.rules.helpers_core.sorted_jvp", "result"): "the order only",
    ("adgen.rules.helpers_core.sorted_jvp", "iterable"): "the order only",
    ("adgen.rules.helpers_tangent.view_tangent", "base"): "a layout",
    ("adgen.rules.helpers_tangent.given_tangent", "x"): "a layout",
    ("adgen.rules.helpers_core.extreme_tangent", "z"): "selects the tied items",
    ("adgen.rules.helpers_core.extreme_tangent", "x"): "selects the tied items",
    ("adgen.rules.helpers_core.extreme_tangent", "y"): "selects the tied items",
    ("adgen.rules.helpers_tangent.exponent_log", "b"): "whether the exponent is an int",
    ("adgen.runtime.stored_value", "x"): "the stored-into array's layout",
    ("adgen.runtime.accumulate_extreme_vjp", "a"): "selects the running extremes",
    ("adgen.runtime.accumulate_extreme_jvp", "a"): "selects the running extremes",
}

# (rule name, parameter) -> what to do instead: a derivative there is refused, never a zero
REFUSED = {
    ("numpy.linalg.norm", "ord"):
        "the norm's order is not differentiated: pass a constant ord, or write the p-norm "
        "out, np.sum(np.abs(x) ** p) ** (1 / p), which differentiates in p",
    ("numpy.var", "ddof"):
        "ddof is not differentiated: pass a constant ddof, or write the variance out, "
        "np.sum((x - np.mean(x)) ** 2) / (x.size - ddof), which differentiates in ddof",
    ("numpy.std", "ddof"):
        "ddof is not differentiated: pass a constant ddof, or write the deviation out, "
        "np.sqrt(np.sum((x - np.mean(x)) ** 2) / (x.size - ddof)), which differentiates "
        "in ddof",
    # the operand-list form np.einsum(a, [0, 1], b, [1, 2]) binds its first operand here:
    # a derivative there would be dropped (the jvp gave it no term, silently)
    ("numpy.einsum", "subscripts"):
        "write the subscripts-string form, np.einsum('ij,jk->ik', a, b): adgen "
        "differentiates every operand there (the operand-list form np.einsum(a, [0, 1], b, "
        "[1, 2]) is not differentiated)",
    ("scipy.special.polygamma", "n"):
        "SciPy defines polygamma for integer orders n only, which have no derivative: pass "
        "an int n (a constant, or int(...) of a value), not a float computed from the "
        "differentiated inputs",
    **{(f"scipy.special.{f}", "v"):
       f"the order v of scipy.special.{f} is not differentiated (as in JAX): pass a constant "
       "order (a number the function's arguments do not change), or wrap it in "
       "adgen.stop_gradient" for f in ("jv", "yv", "iv", "kv", "ive", "kve")},
    **{(f"scipy.special.{f}", "a"):
       f"the shape a of scipy.special.{f} is not differentiated: pass a constant a (a "
       "number the function's arguments do not change), or wrap it in adgen.stop_gradient"
       for f in ("gammainc", "gammaincc")},
    ("scipy.special.zeta", "x"):
        "the exponent x of scipy.special.zeta is not differentiated (its derivative in q "
        "is): pass a constant x, or wrap it in adgen.stop_gradient",
    ("adgen.runtime.special_polygamma", "n"):
        "the order of polygamma is an integer, with no derivative",
    ("adgen.runtime.special_bessel", "v"):
        "the order v of a Bessel function is not differentiated (as in JAX): pass a "
        "constant order",
    ("adgen.runtime.special_bessel", "n"): "the derivative's order is an integer",
    ("adgen.runtime.special_gamma_density", "a"):
        "the shape a of the incomplete gamma function is not differentiated: pass a "
        "constant a",
    ("adgen.runtime.special_zeta", "x"):
        "the exponent x of scipy.special.zeta is not differentiated: pass a constant x",
}


# adgen's own helpers that the derivatives of the user's functions call, by what they are
# to the user (reverse mode over a jvp's code, hessian, meets their arguments first)
SHOWN = {
    "numpy.einsum":
        "np.einsum() (the first operand of the operand-list form np.einsum(a, [0, 1], ...))",
    "adgen.runtime.special_polygamma":
        "the derivative of scipy.special.polygamma (adgen.runtime.special_polygamma)",
    "adgen.runtime.special_bessel":
        "the derivative of a Bessel function (adgen.runtime.special_bessel)",
    "adgen.runtime.special_gamma_density":
        "the derivative of scipy.special.gammainc / gammaincc "
        "(adgen.runtime.special_gamma_density)",
    "adgen.runtime.special_zeta":
        "the derivative of scipy.special.zeta (adgen.runtime.special_zeta)",
}


# the functions being compiled for any arguments again after such a refusal
# (transforms.pipeline._compile_new), and whether each reverse pass under way is one of them
# (the innermost last: a callee compiled meanwhile pushes its own)
LENIENT: set[int] = set()
LENIENT_NOW: list[bool] = []


def lenient() -> bool:
    """Whether the reverse pass under way takes such a derivative for the caller's to
    refuse (a function compiled for any arguments: ``Compiled.nondiff_refusal``)."""
    return bool(LENIENT_NOW) and LENIENT_NOW[-1]


def classification(rule: Any, param: str) -> str | None:
    """``"free"``, ``"refused"`` or None (unclassified: refused where it has a derivative)
    for ``rule``'s parameter ``param`` outside ``rule.diff``."""
    key = (rule.name, param)
    if key in REFUSED:
        return "refused"
    if key in FREE or param in FREE_NAMES:
        return "free"
    return None


def active_nondiff(rule: Any, bound: dict[str, Any],
                   has_derivative: Callable[[Any], bool]) -> str | None:
    """The first parameter of ``rule`` outside ``rule.diff`` whose bound argument has a
    derivative (``has_derivative``) and is not classified free; None when there is none."""
    if rule.is_rrule or not rule.diff:
        # a user's rrule differentiates every argument it is given; a rule with no
        # differentiable parameter (np.floor, np.argmax) declares its result constant
        return None
    for p in rule.params:
        if p.name in rule.diff or p.name not in bound:
            continue
        if classification(rule, p.name) == "free":
            continue
        if has_derivative(bound[p.name]):
            return p.name
    return None


def refusal_text(rule: Any, param: str) -> tuple[str, str]:
    """The message and hint refusing ``rule``'s call with a derivative reaching ``param``."""
    hint = REFUSED.get((rule.name, param)) or (
        f"adgen's rule for {rule.name} differentiates only "
        f"{', '.join(rule.diff)}: pass a value without a derivative for {param} (a "
        f"constant), or register a rule that differentiates it (adgen.rrule / defvjp "
        f"with diff=...)")
    shown = SHOWN.get(rule.name, f"{rule.name}()")
    msg = (f"the argument {param} of {shown} has a derivative (it is a differentiated "
           f"input or computed from one), which {rule.name} does not differentiate in: its "
           f"gradient would be a silent zero")
    return msg, hint
