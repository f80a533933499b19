"""Reference gradients by central differences, shared by the test suites.

Everything here is independent of adgen's compiler, so a test that compares adgen against these
functions compares it against arithmetic, not against itself:

- :func:`numerical_grad` — the gradient of a scalar function by central differences, with the
  structure of the argument (float, ndarray, list / tuple / dict / object of them).
- :func:`assert_grad_close` — compares a gradient with a reference, values *and* structure
  (a float must be a float, an array the same shape, a tuple a tuple ...).
- :func:`numerical_hessian` — the Hessian of a scalar function of a vector by second
  differences of the function.
- :func:`check_grad` — ``adgen.grad`` against :func:`numerical_grad`.
- :func:`check_vjp` — the dot-product test of a pullback: ⟨u, J v⟩ by central differences
  against ⟨pullback(u), v⟩, for random u and v.

Float leaves are Python floats (``np.float64`` included) and float ndarrays. Other leaves (ints,
bools, strings, int arrays, None) are held fixed and have the gradient None.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6


# --------------------------------------------------------------------------------------------
# Structures: flatten the float content of a value to a vector, and rebuild a value from one.


def _is_float_scalar(x: Any) -> bool:
    # bool and int are not floats; np.float64 is a subclass of float.
    return isinstance(x, (float, np.floating)) and not isinstance(x, np.ndarray)


def _is_float_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def _is_object(x: Any) -> bool:
    """A user object whose attributes are part of the structure (not a container, not callable)."""
    return (hasattr(x, "__dict__") and not isinstance(x, type) and not callable(x)
            and not isinstance(x, (np.ndarray, list, tuple, dict)))


def _is_callable_object(x: Any) -> bool:
    """An object of a class with a ``__call__`` of its own (a layer called as ``bn(x)``):
    not part of the differentiated structure, but its attributes are state a call may
    change, compared as an object's are."""
    import types

    return isinstance(getattr(type(x), "__call__", None), types.FunctionType) and \
        hasattr(x, "__dict__") and not isinstance(x, type)


def flatten(x: Any) -> np.ndarray:
    """The float content of ``x`` as one float64 vector, in a deterministic order."""
    parts: list[np.ndarray] = []

    def walk(v: Any) -> None:
        if _is_float_array(v):
            parts.append(np.asarray(v, dtype=np.float64).ravel())
        elif _is_float_scalar(v):
            parts.append(np.array([float(v)]))
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for key in v:
                walk(v[key])
        elif _is_object(v):
            for key in vars(v):
                walk(getattr(v, key))

    walk(x)
    return np.concatenate(parts) if parts else np.zeros(0)


def unflatten(template: Any, flat: np.ndarray, *, as_gradient: bool = False) -> Any:
    """A value of ``template``'s structure whose float content is taken from ``flat``.

    Args:
        template: the structure to rebuild.
        flat: a vector of ``flatten(template).size`` numbers.
        as_gradient: when True the non-float leaves become None (their gradient); otherwise
            they are deep copies of the template's leaves (a perturbed argument).

    Returns:
        The rebuilt value: floats are Python floats, arrays are new float64 arrays with the
        template's memory layout (C or Fortran order).
    """
    pos = 0

    def build(v: Any) -> Any:
        nonlocal pos
        if _is_float_array(v):
            # laid out as the template (a Fortran-order argument stays one: a function that
            # reads memory order, x.ravel(order="K"), sees the same element order); the values
            # go in by index, in the C order flatten took them
            out = np.empty_like(v, dtype=np.float64, subok=False)
            out[...] = flat[pos:pos + v.size].reshape(v.shape)
            pos += v.size
            return out
        if _is_float_scalar(v):
            pos += 1
            return float(flat[pos - 1])
        if isinstance(v, list):
            return [build(item) for item in v]
        if isinstance(v, tuple):
            items = tuple(build(item) for item in v)
            return type(v)._make(items) if hasattr(type(v), "_fields") else items  # namedtuple
        if isinstance(v, dict):
            return {key: build(v[key]) for key in v}
        if _is_object(v):
            new = copy.copy(v)
            for key in list(vars(v)):
                setattr(new, key, build(getattr(v, key)))
            return new
        return None if as_gradient else copy.deepcopy(v)

    result = build(template)
    if pos != flat.size:
        raise ValueError(f"unflatten: used {pos} of {flat.size} numbers")
    return result


def _scalar(out: Any) -> float:
    arr = np.asarray(out, dtype=np.float64)
    if arr.size != 1:
        raise ValueError(f"numerical_grad needs a scalar output, got shape {arr.shape}")
    return float(arr.reshape(()))


# --------------------------------------------------------------------------------------------
# Central differences


def central(f: Callable[[Any], Any], x: Any, eps: float = EPS) -> Any:
    """d f / d x by central differences, for a float or a float ndarray ``x`` (the short form
    the end-to-end tests use; :func:`numerical_grad` takes any argument structure)."""
    if np.ndim(x) == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def numerical_grad(f: Callable[..., Any], args: Sequence[Any], argnum: int, eps: float = EPS,
                   kwargs: dict[str, Any] | None = None) -> Any:
    """The gradient of scalar ``f(*args)`` with respect to ``args[argnum]`` by central differences.

    Each call of ``f`` gets deep copies of the arguments, so a function that mutates its
    arguments still sees the original values.

    Args:
        f: a function returning a float or a size-1 array.
        args: the positional arguments.
        argnum: which argument to differentiate (negative counts from the end).
        eps: the step, (f(x + eps) - f(x - eps)) / (2 eps) per component.
        kwargs: keyword arguments passed to every call.

    Returns:
        A value of the structure of ``args[argnum]`` (float, array, list, tuple, dict, object)
        holding the partial derivatives; non-float leaves are None.
    """
    kwargs = kwargs or {}
    args = list(args)
    argnum = argnum % len(args)
    x0 = args[argnum]
    flat = flatten(x0)
    grad = np.zeros_like(flat)
    for k in range(flat.size):
        values = []
        for step in (eps, -eps):
            moved = flat.copy()
            moved[k] += step
            call_args = copy.deepcopy(args)
            call_args[argnum] = unflatten(x0, moved)
            values.append(_scalar(f(*call_args, **copy.deepcopy(kwargs))))
        grad[k] = (values[0] - values[1]) / (2.0 * eps)
    return unflatten(x0, grad, as_gradient=True)


def numerical_grads(f: Callable[..., Any], args: Sequence[Any], argnums: int | Sequence[int],
                    eps: float = EPS, kwargs: dict[str, Any] | None = None) -> Any:
    """:func:`numerical_grad` for an ``argnums`` as ``adgen.grad`` takes it (int or tuple)."""
    if isinstance(argnums, int):
        return numerical_grad(f, args, argnums, eps, kwargs)
    return tuple(numerical_grad(f, args, n, eps, kwargs) for n in argnums)


def numerical_jvp(f: Callable[..., Any], args: Sequence[Any], tangents: Sequence[Any],
                  eps: float = EPS, kwargs: dict[str, Any] | None = None) -> np.ndarray:
    """J v by central differences: the flattened change of f's output along ``tangents``.

    ``tangents[i]`` has the structure of ``args[i]`` (None for an argument held fixed).
    """
    kwargs = kwargs or {}
    outs = []
    for sign in (1.0, -1.0):
        moved = []
        for a, t in zip(args, tangents):
            if t is None:
                moved.append(copy.deepcopy(a))
            else:
                moved.append(unflatten(a, flatten(a) + sign * eps * flatten(t)))
        outs.append(flatten(f(*moved, **copy.deepcopy(kwargs))))
    return (outs[0] - outs[1]) / (2.0 * eps)


def numerical_hessian(f: Callable[[np.ndarray], Any], x: np.ndarray, h: float = 1e-4
                      ) -> np.ndarray:
    """The Hessian of a scalar function of a 1-D array by second central differences of ``f``
    itself (four values a pair of directions): error O(h^2), so tolerances near 1e-4."""
    n = x.size
    e = np.eye(n) * h
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            hess[i, j] = (_scalar(f(x + e[i] + e[j])) - _scalar(f(x + e[i] - e[j]))
                          - _scalar(f(x - e[i] + e[j])) + _scalar(f(x - e[i] - e[j]))) \
                / (4 * h * h)
    return hess


def numerical_vjp(f: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """A reference ``vjp`` by central differences, with adgen.vjp's calling convention.

    ``pullback(u)`` differentiates ⟨u, f(*args)⟩ with respect to each argument (None for
    arguments without float content). Used to test the harness itself on any output structure.
    """
    out = f(*copy.deepcopy(list(args)), **copy.deepcopy(kwargs))

    def pullback(u: Any) -> tuple[Any, ...]:
        weights = flatten(u)

        def projected(*a: Any) -> float:
            return float(weights @ flatten(f(*a, **copy.deepcopy(kwargs))))

        return tuple(numerical_grad(projected, args, i) if flatten(a).size else None
                     for i, a in enumerate(args))

    return out, pullback


# --------------------------------------------------------------------------------------------
# Comparison, structure included


def assert_grad_close(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL,
                      path: str = "grad", *, check_values: bool = True) -> None:
    """Asserts that ``actual`` has the structure of ``expected`` and close values.

    Structure: a float must be a float scalar (not an array), an ndarray an ndarray of the same
    shape and a float dtype, a list a list, a tuple a tuple, a dict a dict with the same keys, an
    object an object of the same class, None None.

    Other leaves (ints, strings) must be equal. With ``check_values=False`` only the structure
    is compared.

    Raises:
        AssertionError: naming the path of the first mismatch (``grad[1]['W']``).
    """
    kw = {"check_values": check_values}
    if expected is None:
        assert actual is None, f"{path}: expected None (no float content), got {actual!r}"
    elif _is_float_scalar(expected):
        assert _is_float_scalar(actual), (
            f"{path}: expected a float, got {type(actual).__name__} {actual!r}")
        if check_values:
            _assert_values(np.float64(actual), np.float64(expected), rtol, atol, path)
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), (
            f"{path}: expected an ndarray of shape {expected.shape}, got "
            f"{type(actual).__name__} {actual!r}")
        assert actual.shape == expected.shape, (
            f"{path}: expected shape {expected.shape}, got {actual.shape}")
        if expected.dtype.kind == "f":
            assert actual.dtype.kind == "f", (
                f"{path}: expected a float array, got {actual.dtype}")
        if check_values:
            _assert_values(actual, expected, rtol, atol, path)
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), (
            f"{path}: expected a {type(expected).__name__}, got {type(actual).__name__}")
        assert len(actual) == len(expected), (
            f"{path}: expected length {len(expected)}, got {len(actual)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_grad_close(a, e, rtol, atol, f"{path}[{i}]", **kw)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), (
            f"{path}: expected a dict, got {type(actual).__name__}")
        assert set(actual) == set(expected), (
            f"{path}: expected keys {sorted(map(repr, expected))}, got "
            f"{sorted(map(repr, actual))}")
        for key in expected:
            assert_grad_close(actual[key], expected[key], rtol, atol, f"{path}[{key!r}]", **kw)
    elif _is_object(expected):
        assert type(actual) is type(expected), (
            f"{path}: expected a {type(expected).__name__}, got {type(actual).__name__}")
        for key in vars(expected):
            assert hasattr(actual, key), f"{path}: missing attribute {key!r}"
            assert_grad_close(getattr(actual, key), getattr(expected, key), rtol, atol,
                              f"{path}.{key}", **kw)
    else:
        assert type(actual) is type(expected) and actual == expected, (
            f"{path}: expected {expected!r}, got {actual!r}")


def _assert_values(actual: Any, expected: Any, rtol: float, atol: float, path: str) -> None:
    ok = np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    if not ok:
        diff = np.abs(np.asarray(actual) - np.asarray(expected))
        raise AssertionError(
            f"{path}: values differ (max abs diff {np.max(diff):.3g}, rtol={rtol}, "
            f"atol={atol})\n  actual:   {actual!r}\n  expected: {expected!r}")


def assert_same_state(actual: Any, expected: Any, path: str = "arg") -> None:
    """Asserts two values are equal leaf by leaf (exactly; NaN equals NaN), structure included.

    Used to check that differentiating a function left its arguments as a plain call does.
    """
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray) and actual.shape == expected.shape, (
            f"{path}: expected an array of shape {expected.shape}, got {actual!r}")
        assert np.array_equal(actual, expected, equal_nan=expected.dtype.kind in "fc"), (
            f"{path}: contents differ\n  actual:   {actual!r}\n  expected: {expected!r}")
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected), (
            f"{path}: expected {expected!r}, got {actual!r}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_state(a, e, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (
            f"{path}: expected keys {list(expected)}, got {actual!r}")
        for key in expected:
            assert_same_state(actual[key], expected[key], f"{path}[{key!r}]")
    elif _is_object(expected) or _is_callable_object(expected):
        assert type(actual) is type(expected), f"{path}: expected a {type(expected).__name__}"
        assert set(vars(actual)) == set(vars(expected)), f"{path}: attributes differ"
        for key in vars(expected):
            assert_same_state(getattr(actual, key), getattr(expected, key), f"{path}.{key}")
    elif _is_float_scalar(expected) and np.isnan(expected):
        assert _is_float_scalar(actual) and np.isnan(actual), f"{path}: expected nan"
    else:
        assert actual == expected, f"{path}: expected {expected!r}, got {actual!r}"


# --------------------------------------------------------------------------------------------
# adgen against the references


def check_grad(f: Callable[..., Any], args: Sequence[Any], argnums: int | Sequence[int] = 0, *,
               rtol: float = RTOL, atol: float = ATOL, eps: float = EPS,
               kwargs: dict[str, Any] | None = None,
               grad: Callable[..., Any] | None = None,
               mutation: str | None = None, strict_must_compute: bool = False) -> Any:
    """Checks ``adgen.grad(f, argnums)(*args)`` against central differences.

    Also checks that the arguments are left as a plain call ``f(*args)`` leaves them.
    With ``mutation="strict"`` a MutationError is an accepted answer (refused, never wrong):
    the check returns None then, unless ``strict_must_compute`` says strict must give the
    gradient (a program whose writes destroy nothing the gradient reads).

    Args:
        f: the function.
        args: its positional arguments (not modified: the calls get deep copies).
        argnums: as for ``adgen.grad``.
        rtol, atol: tolerances of :func:`assert_grad_close`.
        eps: the central-difference step.
        kwargs: keyword arguments for every call.
        grad: the gradient transform to test (``adgen.grad`` by default; the tests of this
            module pass a hand-written one).
        mutation: the policy passed to ``grad`` (its default when None).
        strict_must_compute: a MutationError fails the check under ``mutation="strict"`` too.

    Returns:
        The gradient adgen returned (None where strict refused and that was accepted).
    """
    if grad is None:
        import adgen

        grad = adgen.grad
    kwargs = kwargs or {}
    expected = numerical_grads(f, args, argnums, eps, kwargs)
    plain_args = copy.deepcopy(list(args))
    f(*plain_args, **copy.deepcopy(kwargs))
    ad_args = copy.deepcopy(list(args))
    options = {} if mutation is None else {"mutation": mutation}
    try:
        actual = grad(f, argnums=argnums, **options)(*ad_args, **copy.deepcopy(kwargs))
    except Exception as exc:
        if (mutation == "strict" and not strict_must_compute
                and type(exc).__name__ == "MutationError"):
            return None  # strict refuses a write that destroys a value the pullback reads
        raise
    assert_grad_close(actual, expected, rtol, atol)
    assert_same_state(ad_args, plain_args, "args")
    return actual


def random_like(x: Any, rng: np.random.Generator) -> Any:
    """A random value of the structure of ``x`` (float content only; other leaves None)."""
    return unflatten(x, rng.standard_normal(flatten(x).size), as_gradient=True)


def _has_float_content(x: Any) -> bool:
    return flatten(x).size > 0


def check_vjp(f: Callable[..., Any], args: Sequence[Any], *, rtol: float = RTOL,
              atol: float = ATOL, eps: float = EPS, seed: int = 0,
              kwargs: dict[str, Any] | None = None,
              vjp: Callable[..., Any] | None = None) -> None:
    """The dot-product test of ``vjp(f, *args)``: ⟨u, J v⟩ = ⟨pullback(u), v⟩.

    u is a random cotangent of the output's structure, v a random tangent of the arguments';
    J v comes from central differences. Also checks that the pullback returns one cotangent per
    positional argument with the argument's structure (None for arguments without float
    content), that ``out`` is what a plain call returns, and that calling the pullback again
    gives the same cotangents (pullbacks are reusable, design §2.6).

    Args:
        f: the function (any output with float content).
        args: positional arguments.
        rtol, atol: tolerances of the scalar comparison.
        eps: the central-difference step.
        seed: for u and v.
        kwargs: keyword arguments for every call.
        vjp: the vjp to test (``adgen.vjp`` by default).
    """
    if vjp is None:
        import adgen

        vjp = adgen.vjp
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    plain_out = f(*copy.deepcopy(list(args)), **copy.deepcopy(kwargs))
    out, pullback = vjp(f, *copy.deepcopy(list(args)), **copy.deepcopy(kwargs))
    assert_grad_close(out, plain_out, rtol=1e-12, atol=1e-12, path="out")

    u = random_like(plain_out, rng)
    tangents = [random_like(a, rng) if _has_float_content(a) else None for a in args]
    cts = pullback(u)
    assert isinstance(cts, tuple), f"pullback must return a tuple, got {type(cts).__name__}"
    assert len(cts) == len(args), (
        f"pullback returned {len(cts)} cotangents for {len(args)} positional arguments")
    for i, (ct, a) in enumerate(zip(cts, args)):
        if not _has_float_content(a):
            assert ct is None, f"cotangent {i}: argument {a!r} has no float content, got {ct!r}"
        else:
            # Structure only here; the values are checked by the dot product below.
            template = unflatten(a, np.zeros(flatten(a).size), as_gradient=True)
            assert_grad_close(ct, template, path=f"cotangent[{i}]", check_values=False)

    jv = numerical_jvp(f, args, tangents, eps, kwargs)
    lhs = float(flatten(u) @ jv)
    rhs = sum(float(flatten(ct) @ flatten(t)) for ct, t in zip(cts, tangents) if t is not None)
    scale = max(abs(lhs), abs(rhs), 1.0)
    assert abs(lhs - rhs) <= atol + rtol * scale, (
        f"dot-product test failed: <u, J v> = {lhs!r} by central differences, "
        f"<pullback(u), v> = {rhs!r}")

    again = pullback(u)
    assert_same_state(list(again), list(cts), "pullback called twice")


def check_jvp(f: Callable[..., Any], args: Sequence[Any], tangents: Sequence[Any], *,
              rtol: float = 1e-6, atol: float = 1e-9) -> None:
    """``adgen.jvp(f, args, tangents)``'s tangent against :func:`numerical_jvp` (the
    arguments are passed as copies: f may write them in place)."""
    import adgen

    _, tangent = adgen.jvp(f, tuple(copy.deepcopy(list(args))), tuple(tangents))
    np.testing.assert_allclose(flatten(tangent), numerical_jvp(f, args, tangents),
                               rtol=rtol, atol=atol)
