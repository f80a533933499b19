"""Why a call has no derivative, said to the user: the NumPy functions adgen refuses and why
(``defrefusal``, ``refusal_of``: ``rules/no_gradient.py`` records them), the end of a
MissingRuleError message (``why_no_rule``: a refusal's reason, a random draw's reparameterized
form, adgen's own derivative makers, a function without readable source), and the hint of a
call whose arguments a rule does not take (``binding_hint``; ``check_run_binding`` refuses
such a call found when it runs). :mod:`adgen.rules.registry`
re-exports them: the compiler asks the registry for a rule and, where there is none, why.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adgen.rules.registry import Rule


# What to write instead of a keyword a rule does not take (the rest of binding_hint's text)
_KEYWORD_HINTS = {
    # (the reductions' where=/initial=/dtype= are lowered before binding, methods too:
    # reduction_keywords; np.where(m, x, 0) is a masked sum's, not a std's)
    "where": "; for where=m, select the entries first: {short}(x[m]) for a mask of x's shape",
    "dtype": "; for dtype=, x.astype(dtype) first",
    # scipy.special.logsumexp's: the sign has no derivative
    "return_sign": "; return_sign=True is not differentiated: take the sign apart, with c = "
                   "np.max(a, axis=axis, keepdims=True) and s = np.sum(b * np.exp(a - c), "
                   "axis=axis, keepdims=True): np.log(np.abs(s)) + c is the value, np.sign(s) "
                   "the sign",
}


# what to write instead of a call a rule does not take, by rule
_RULE_HINTS = {
    "numpy.ndarray.view": "; x.view(dtype) reinterprets the bytes, which has no gradient: "
                          "convert the values with x.astype(dtype), or take x itself",
}


def binding_hint(rule: Rule, exc: TypeError) -> str:
    """The hint of the error for a call whose arguments ``rule.bind`` refused with ``exc``:
    the parameters the rule takes, and what to write for a keyword it does not take."""
    known = ", ".join(p.name for p in rule.params)
    short = rule.name.replace("numpy.", "np.")
    extra = next((text.format(short=short) for key, text in _KEYWORD_HINTS.items()
                  if f"keyword {key!r}" in str(exc)), _RULE_HINTS.get(rule.name, ""))
    return f"adgen's rule for {rule.name} takes ({known}){extra}"


def check_run_binding(rule: Rule, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuses a call found when it runs (a NumPy function held in a variable or an object,
    ``op(y, t, y)`` of ``op = np.add``) whose arguments ``rule`` does not take: run as it is,
    an output argument (``out=``, a ufunc's positional output) would be written unseen, and
    the derivative raised NumPy's own TypeError.

    Raises:
        UnsupportedError: naming the function, the arguments, and what to write instead.
    """
    positional = [p for p in rule.params if not p.kwonly]
    if "out" not in kwargs and (any(p.varargs for p in positional) or
                                len(args) <= len(positional)):
        return  # (no output argument: what the rule does not take is refused where it binds)
    try:
        rule.bind(list(args), dict(kwargs))
    except TypeError as exc:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"{rule.name.replace('numpy.', 'np.')}, called through a variable or an object "
            f"where adgen runs it as it is, is given arguments its rule does not take "
            f"({exc}): an output argument (out=, or a ufunc's positional output) would be "
            "written unseen",
            hint=binding_hint(rule, exc) + "; call it by its name where the call is "
            "(np.add(a, b, out=y)), whose output adgen lowers as a write, or bind the result "
            "(y = op(a, b))") from exc


_REFUSED: dict[int, tuple[Any, str]] = {}
_REFUSAL_HINTS: dict[int, str] = {}


def defrefusal(primal: Any, reason: str, hint: str = "") -> None:
    """Records why ``primal`` has no rule; the compiler's MissingRuleError says it (and
    ``hint``, what to write instead, as its hint)."""
    _REFUSED[id(primal)] = (primal, reason)
    if hint:
        _REFUSAL_HINTS[id(primal)] = hint


def refusal_hint_of(func: Any) -> str:
    """What to write instead of a call of ``func`` that :func:`defrefusal` recorded, or ""."""
    return _REFUSAL_HINTS.get(id(func), "") if refusal_of(func) is not None else ""


def refusal_of(func: Any) -> str | None:
    """The recorded reason ``func`` is not differentiated, or None."""
    got = _REFUSED.get(id(func))
    return got[1] if got is not None and got[0] is func else None


# adgen's functions that take derivatives (a call of one inside a differentiated function)
_DERIVATIVE_MAKERS = frozenset({"jvp", "vjp", "jacfwd", "jacrev", "jacobian", "hvp", "hessian",
                                "grad", "value_and_grad"})


def makes_derivative(func: Any) -> bool:
    """Whether ``func`` is one of adgen's own derivative makers (``adgen.grad``,
    ``adgen.hessian``, ``adgen.jvp``, ...)."""
    return str(getattr(func, "__module__", "") or "") in (
        "adgen.higher_order", "adgen.api", "adgen.checkpointing") and \
        getattr(func, "__name__", "") in _DERIVATIVE_MAKERS


# the reparameterized form of a draw with a gradient, by the sampler's name (a normal's
# by default): the random part drawn with constant parameters, the parameters outside
_REPARAMETERIZED = {
    "uniform": "low + (high - low) * rng.random(shape) (the reparameterization)",
    "exponential": "scale * rng.standard_exponential(shape) (the reparameterization)",
    "lognormal": "np.exp(mean + sigma * rng.standard_normal(shape)) (the reparameterization)",
    "multivariate_normal": "mean + rng.standard_normal((n, len(mean))) @ "
                           "np.linalg.cholesky(cov).T (the reparameterization)",
    "permutation": "x[rng.permutation(len(x))] (a permutation of positions, which has no "
                   "gradient)",
    "choice": "x[rng.choice(len(x), size)] (positions chosen at random, which have no "
              "gradient)",
}


def reparameterized_form(sampler: str) -> str:
    """How to write a draw of ``sampler`` (a Generator method's name) whose parameters carry
    a gradient: its random part drawn with constant parameters, the parameters outside."""
    return _REPARAMETERIZED.get(sampler, "loc + scale * rng.standard_normal(shape) (the "
                                         "reparameterization)")


def why_no_rule(func: Any) -> str:
    """The end of a MissingRuleError message: why a call of ``func`` cannot be differentiated.

    A NumPy function's Python source is readable, but adgen differentiates NumPy only
    through rules and reference implementations (NumPy's own source calls C); a function
    whose source is unavailable (a builtin, a C extension) is said to be so.
    """
    reason = refusal_of(func)
    owner = getattr(func, "__self__", None)
    if reason is None and owner is not None:
        # a builtin method bound to its object (seen.add of a set): refused as its class's
        reason = refusal_of(getattr(type(owner), getattr(func, "__name__", ""), None))
    if reason is not None:
        return f": {reason}"
    import numpy as np

    if isinstance(owner, (np.random.Generator, np.random.RandomState)) or \
            str(getattr(func, "__module__", "") or "").startswith("numpy.random"):
        # a draw is a constant of the forward pass; one whose parameters have a gradient
        # has none adgen can define without a choice of estimator
        form = reparameterized_form(getattr(func, "__name__", ""))
        return (f": a random draw whose parameters carry a gradient; write it as {form} to "
                "differentiate through it (draws with constant parameters are constants)")

    mod = str(getattr(func, "__module__", "") or "")
    if makes_derivative(func) and func.__name__ in ("jvp", "vjp"):
        # adgen.jvp(...) inside a function given to adgen.grad: the rrule hint misleads
        return (f": adgen.{func.__name__} called inside a function adgen differentiates "
                "returns values, not a function adgen can differentiate through; a derivative "
                "function is (adgen.grad(f), adgen.hvp(f), adgen.jacfwd(f) called there: "
                "adgen.hvp(f)(x, v) is the jvp of the gradient), or take the derivative of "
                "the whole function: adgen.hessian(f), adgen.jacfwd(adgen.grad(f))")
    if makes_derivative(func):
        # adgen.grad(inner) where inner closes over a value with a derivative (a call of
        # a derivative function is differentiated with respect to what the call passes)
        return (f": the function given to adgen.{func.__name__} here reads a value with a "
                "derivative from the enclosing function (a closure over it, or an argument a "
                "partial binds), and adgen differentiates a call of a derivative function "
                "with respect to the arguments the call passes only; pass that value as an "
                f"argument (adgen.{func.__name__}(inner)(v, w) with def inner(v, w))")
    if isinstance(func, np.ufunc) or mod.startswith("numpy"):
        return (" (adgen differentiates NumPy through its rules and reference "
                "implementations, not through NumPy's own source, and has neither for it)")
    try:
        inspect.getsource(func)
    except (TypeError, OSError):
        return " and adgen cannot read its source"
    return ""
