"""Rule helpers of forward mode: the tangent code (``f_jvp``) calls these.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
A tangent has its primal's structure: a float array of the same shape for an array (also
for an integer array, whose tangent is zero), a float for a number, a list for a list, a
tuple for a tuple, a dict for a dict. Each helper has a derivative rule
(:mod:`adgen.rules.tangents`), so reverse mode can differentiate tangent code again (second
derivatives by reverse over forward).
"""

import numpy as np

from adgen.rules.helpers_core import unsupported, xlogy, xlogy_dx, xlogy_dy

__all__ = [
    "astype_jvp",
    "broadcast_zeros",
    "cholesky_jvp",
    "class_constants",
    "dtype_kind",
    "exponent_log",
    "exponent_log_dx",
    "exponent_log_dy",
    "fit_tangent",
    "float_part",
    "given_tangent",
    "ieee_number",
    "integral_exponent",
    "is_plain_object",
    "named_like",
    "named_like_vjp",
    "object_with",
    "partial_binds_no_tangent",
    "refuse_nonzero_tangent",
    "sequence_operand",
    "slot_values",
    "solve_jvp_a",
    "tangent_is_zero",
    "view_tangent",
    "zero_tangent",
]


def zero_tangent(x: object, _within: frozenset[int] = frozenset()) -> object:
    """The zero tangent of ``x``: a new array of zeros for an array, 0.0 for a number, the
    same structure for a list, tuple or dict, and for an object of a class of the user's (an
    object of the standard library's, a ``logging.Logger`` handed in, has none: 0.0). A
    container or object met again inside itself (a tree node's parent) is 0.0 there: the
    walk ended never before."""
    if isinstance(x, np.ndarray):
        # a complex buffer's tangent is complex (a store into it keeps both parts)
        return np.zeros(x.shape, np.complex128 if x.dtype.kind == "c" else np.float64)
    if isinstance(x, (complex, np.complexfloating)):
        return 0j
    if isinstance(x, (list, tuple, dict)) or is_plain_object(x):
        if id(x) in _within:
            return 0.0
        _within = _within | {id(x)}
    if isinstance(x, list):
        return [zero_tangent(v, _within) for v in x]
    if isinstance(x, tuple):
        items = tuple(zero_tangent(v, _within) for v in x)
        return type(x)._make(items) if hasattr(type(x), "_fields") else items  # namedtuple
    if isinstance(x, dict):
        return {k: zero_tangent(v, _within) for k, v in x.items()}
    if hasattr(x, "tocsr") and hasattr(x, "nnz"):
        # a scipy.sparse matrix (a constant operand of @): a sparse zero of its shape, which
        # computes @ as it does (its attributes zeroed one by one made its shape (0.0, 0.0))
        return x * 0.0
    if is_plain_object(x):
        import sys

        if str(type(x).__module__).split(".")[0] not in sys.stdlib_module_names:
            out = object_with(type(x),
                              {k: zero_tangent(v, _within) for k, v in vars(x).items()},
                              _within)
            # a symbolic zero: this object, as made here, until an attribute of it is set
            # (tangent_calls.known_zero compares); a numeric zero is not known zero (a
            # tangent c_dot = 2 x0 v0 stored at x0 = 0 is a zero whose derivative is not)
            made = zero_tangent.__dict__.setdefault("made", {})
            try:
                import weakref

                weakref.finalize(out, made.pop, id(out), None)
            except TypeError:  # (an object of a class no weak reference can hold)
                return out
            made[id(out)] = (weakref.ref(out), dict(vars(out)))
            return out
    if isinstance(x, type) and str(x.__module__).split(".")[0] not in (
            "builtins", "numpy", "scipy", "adgen"):
        import sys
        import types

        if str(x.__module__).split(".")[0] not in sys.stdlib_module_names:
            # a class of the user's (cls of a classmethod given to jvp): zeros for the values
            # it holds, which its tangent code reads as cls_dot.k (0.0 raised AttributeError)
            return types.SimpleNamespace(**class_constants(x, {}, _within))
    slots = slot_values(x)
    if slots is not None:  # an object of a class of the user's with __slots__ (no __dict__)
        if id(x) in _within:
            return 0.0
        return object_with(type(x), {k: zero_tangent(v, _within | {id(x)})
                                     for k, v in slots.items()}, _within)
    return 0.0


def slot_values(x: object) -> dict | None:
    """The attributes of ``x`` set in its ``__slots__``, where ``x`` is an object of a class
    of the user's with ``__slots__`` and no ``__dict__``; else None (its tangent was 0.0, and
    the tangent code's ``self_dot.w`` raised AttributeError)."""
    import sys

    cls = type(x)
    if hasattr(x, "__dict__") or callable(x) or isinstance(x, (np.ndarray, np.generic)) or \
            str(cls.__module__).split(".")[0] in sys.stdlib_module_names or \
            str(cls.__module__).split(".")[0] in ("numpy", "scipy", "builtins") or \
            not any("__slots__" in vars(k) for k in cls.__mro__[:-1]):
        return None
    names = []
    for k in cls.__mro__[:-1]:
        declared = vars(k).get("__slots__", ())
        names += [declared] if isinstance(declared, str) else list(declared)
    return {n: getattr(x, n) for n in names if n != "__weakref__" and hasattr(x, n)}


def fit_tangent(d: object, like: object) -> object:
    """``d`` as a new float array of ``like``'s shape when ``like`` is an array (a tangent of a
    broadcasting op whose broadcast operand had none, or another name's tangent that must
    not be shared); ``d`` itself otherwise. Complex where ``d`` or ``like`` is: the tangent
    of ``np.fft.rfft(x) / k`` with ``k`` a real array (cast to float, its imaginary part was
    dropped: a silently wrong jvp)."""
    if isinstance(like, np.ndarray):
        complex_ = like.dtype.kind == "c" or np.iscomplexobj(d)
        # (a float32 result's tangent float32, as JAX keeps it)
        return np.array(np.broadcast_to(d, like.shape),
                        dtype=np.complex128 if complex_ else
                        like.dtype if like.dtype.kind == "f" else float)
    return d


def named_like(d: object, like: object) -> object:
    """The tangent ``d`` (a plain tuple) of a NumPy result ``like`` that is a named tuple
    (``np.linalg.eigh``'s ``EighResult``, svd's, qr's, slogdet's) as a named tuple of the same
    class, so ``r_dot.eigenvalues`` reads it wherever ``r.eigenvalues`` is read (a callee
    given the result, ``getattr``); ``d`` itself otherwise."""
    if isinstance(d, tuple) and isinstance(like, tuple) and hasattr(type(like), "_fields") \
            and type(d) is not type(like) and len(d) == len(like):
        return type(like)._make(d)
    return d


def named_like_vjp(g: object) -> object:
    """Adjoint of :func:`named_like` in its tangent: the cotangent of the named tuple as a
    plain tuple (the structure of the tangent it was made from); None stays None."""
    return tuple(g) if isinstance(g, tuple) else g


def view_tangent(d: object, like: object, base: object) -> object:
    """The tangent of a view op's result: ``d`` (the same view of the base's tangent) when
    the primal result ``like`` shares memory with its base, else a copy of ``d`` (the primal copied,
    e.g. a reshape of a non-contiguous array): writes through either stay in step."""
    if isinstance(like, np.ndarray) and isinstance(base, np.ndarray) and \
            not np.may_share_memory(like, base):
        # a copy that keeps a complex tangent complex (z.conj() of a complex z is a copy)
        return np.array(d, dtype=complex if np.iscomplexobj(d) else float)
    return d


def sequence_operand(x: object) -> object:
    """A ufunc's operand (or its tangent) as NumPy takes it: a list or tuple as an array, since
    the rule's template applies Python's operators to it (``2.0 * x * d`` of ``np.square(L)``
    with a list ``L`` raised TypeError; ``d * 3`` repeated it); anything else itself."""
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def integral_exponent(b: object) -> bool:
    """Whether an exponent is an int, a bool or an integer array (no derivative)."""
    return isinstance(b, (bool, int, np.integer, np.bool_)) or (
        isinstance(b, np.ndarray) and b.dtype.kind in "biu")


def broadcast_zeros(x: object, y: object) -> object:
    """Zeros of the shape ``x`` and ``y`` broadcast to (a float64 number for two numbers)."""
    res = np.zeros(np.broadcast(x, y).shape)
    return res[()] if res.ndim == 0 else res


def exponent_log(x: object, y: object, b: object) -> object:
    """``xlogy(x, y)``, the tangent of ``y ** b`` (``x``) along the exponent ``b``; zeros where
    ``b`` is an int: it has no derivative, whatever tangent the caller's code holds for it (an
    int returned by a helper, ``n = count(x)``, has the zero tangent 0.0, and 0.0 * log of a
    negative base made the jvp of ``x ** n`` nan)."""
    return broadcast_zeros(x, y) if integral_exponent(b) else xlogy(x, y)


def exponent_log_dx(x: object, y: object, b: object) -> object:
    """:func:`exponent_log`'s partial derivative in ``x`` (second derivatives of ``y ** b``)."""
    return broadcast_zeros(x, y) if integral_exponent(b) else xlogy_dx(x, y)


def exponent_log_dy(x: object, y: object, b: object) -> object:
    """:func:`exponent_log`'s partial derivative in ``y``."""
    return broadcast_zeros(x, y) if integral_exponent(b) else xlogy_dy(x, y)


def ieee_number(x: object) -> object:
    """A Python float as an np.float64 (whose arithmetic gives inf or nan where Python's
    raises: the jvp code's fallback, transforms/ieee_tangents.py); anything else itself."""
    return np.float64(x) if type(x) is float else x


def given_tangent(t: object, x: object) -> object:
    """A tangent passed to a jvp for the argument ``x``: a new float array laid out like ``x``
    (the tangent code writes it in place where the primal writes ``x``); None is zero, and so
    is any tangent of an integer or boolean."""
    if t is None or isinstance(x, (bool, int, np.integer, np.bool_)) or (
            isinstance(x, np.ndarray) and x.dtype.kind not in "fc"):
        return zero_tangent(x)  # integers carry no derivative (as their gradient is None)
    if (isinstance(t, (complex, np.complexfloating)) or
            isinstance(t, np.ndarray) and t.dtype.kind == "c") and not (
            isinstance(x, (complex, np.complexfloating)) or
            isinstance(x, np.ndarray) and x.dtype.kind == "c"):
        # cast to the real buffer, its imaginary part was dropped (a zero derivative)
        unsupported("a complex tangent was given for a real argument: forward mode "
                    "propagates real tangents (give the real and imaginary directions as two "
                    "jvps)")
    if isinstance(x, np.ndarray):
        if np.shape(t) != x.shape:
            unsupported(f"a tangent of shape {np.shape(t)} was given for an argument of "
                        f"shape {x.shape}")
        # in the primal's float dtype (a float32 tangent stays float32, as in JAX)
        out = np.empty_like(x, dtype=x.dtype if x.dtype.kind == "f" else float)
        out[...] = t
        return out
    if isinstance(x, (float, np.floating)):
        # an array (or list) tangent for a number broadcast through the tangent code: a
        # tangent of no direction, or an array where the derivative is a number
        if np.ndim(t) != 0 or isinstance(t, (list, tuple, dict)):
            unsupported(f"a tangent of shape {np.shape(t)} was given for an argument that is "
                        "a number: give a number (or None)")
        # a NumPy number of the primal's float type: float64 for a Python float, whose
        # tangent code then follows IEEE rules (d log(x) = t / x at x = 0.0 is inf with a
        # RuntimeWarning, as in JAX, not a ZeroDivisionError); float32 stays float32
        return np.float64(t) if type(x) is float else type(x)(t)
    # how the tangent's structure reads in a refusal (helpers stay standalone: inline)
    given = (f"with keys {list(t)}" if isinstance(t, dict) else
             f"of {len(t)} items" if isinstance(t, (list, tuple)) else f"of shape {np.shape(t)}")
    if isinstance(x, (list, tuple)):
        if not isinstance(t, (list, tuple)) or len(t) != len(x):
            unsupported(f"a tangent {given} was given for an argument of {len(x)} items (a "
                        "list or tuple): give one tangent per item (None for none)")
        items = [given_tangent(a, b) for a, b in zip(t, x)]
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):
            # a named tuple's tangent given as a plain tuple: of its class, so t_dot.w reads
            # it (AttributeError 'tuple' object has no attribute 'w' before session 23)
            return type(x)._make(items)
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        if not isinstance(t, dict) or set(t) != set(x):
            unsupported(f"a tangent {given} was given for an argument that is a dict "
                        f"with keys {list(x)}: give one tangent per key (None for none)")
        return {k: given_tangent(t[k], v) for k, v in x.items()}
    if is_plain_object(x):  # an object of x's class (as a gradient is), or anything with its fields
        return object_with(type(x), {k: given_tangent(getattr(t, k, None), v)
                                     for k, v in vars(x).items()})
    return t


def is_plain_object(x: object) -> bool:
    """An instance of a user class with attributes (not a number, array or container), a
    layer with a ``__call__`` written in Python included (not a function, method or class:
    their ``__call__`` has no ``__code__``); the zero tangent of a layer was 0.0, and
    hessian(layer) failed on ``self_dot.a``."""
    return hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type)) and \
        (not callable(x) or hasattr(getattr(type(x), "__call__", None), "__code__"))


def object_with(cls: type, fields: dict, _within: frozenset[int] = frozenset()) -> object:
    """An object of ``cls`` with the given attributes, made without calling its __init__.

    A tangent object also gets a zero for each value the class itself holds (``alpha = 1.0``,
    ``shift = np.ones(3)`` in the class body, or a base class's): the tangent code reads
    ``self_dot.alpha`` where the code reads ``self.alpha``, and without an attribute of its
    own the tangent object gave the class's value, 1.0, as the derivative of a constant (a
    silently wrong jvp, hessian or jacfwd of a method mixing such a constant in)."""
    out = object.__new__(cls)
    if not hasattr(out, "__dict__"):  # a class with __slots__: its constants are read-only
        constants = class_constants(cls, fields, _within)
        if constants:
            # (the tangent code's self_dot.alpha would read the class's value as the
            # derivative of a constant: a silently wrong jvp)
            unsupported(f"forward mode (jvp, jacfwd, hessian) of an object of {cls.__qualname__}, "
                        f"a class with __slots__ holding values in its body "
                        f"({', '.join(sorted(constants))}): its tangent object cannot hold a "
                        f"zero for them. Add them to __slots__ and set them in __init__ "
                        f"(self.{min(constants)} = ...), or make them module constants")
        for k, v in fields.items():
            object.__setattr__(out, k, v)
        return out
    out.__dict__.update(class_constants(cls, fields, _within))
    out.__dict__.update(fields)
    return out


def class_constants(cls: type, fields: dict, _within: frozenset[int] = frozenset()) -> dict:
    """Zero tangents of the values ``cls`` and its bases hold as class attributes (numbers,
    arrays, containers and objects of them, not functions, descriptors, classes or modules)
    that ``fields`` does not set. ``_within``: as :func:`zero_tangent`'s (a class holding an
    instance of itself, ``Grid.default = Grid(...)``, is walked once)."""
    import types

    out = {}
    for k in reversed(cls.__mro__[:-1]):  # a subclass's value hides its base's
        for attr, value in vars(k).items():
            if attr.startswith("__") or attr in fields or callable(value) or \
                    hasattr(type(value), "__get__") or \
                    isinstance(value, (type, types.ModuleType, str, bytes)):
                out.pop(attr, None)
                continue
            out[attr] = zero_tangent(value, _within)
    return out


def solve_jvp_a(d: object, a: object, out: object, b: object) -> object:
    """The tangent of ``np.linalg.solve(a, b)`` from ``a``'s tangent ``d``: ``-a⁻¹ d x``, with
    ``x`` a vector (``b`` 1-D, then ``a`` may be a stack) or a stack of matrices."""
    if np.ndim(b) == 1:
        return -np.linalg.solve(a, (d @ out[..., None]))[..., 0]
    return -np.linalg.solve(a, d @ out)


def cholesky_jvp(d: object, out: object) -> object:
    """The tangent of ``L = np.linalg.cholesky(a)`` from ``a``'s tangent ``d``: ``L Φ(L⁻¹ s
    L⁻ᵀ)``, where Φ keeps the lower triangle and halves the diagonal, and ``s`` is the
    symmetric matrix of ``d``'s lower triangle (NumPy reads only the lower triangle of a)."""
    d = np.tril(d) + np.swapaxes(np.tril(d, -1), -1, -2)
    inner = np.linalg.solve(out, np.swapaxes(np.linalg.solve(out, d), -1, -2))
    phi = np.tril(inner) - 0.5 * (inner * np.eye(inner.shape[-1]))
    return out @ phi


def astype_jvp(d: object, out: object) -> object:
    """The tangent of ``a.astype(dtype)``: ``d`` for a float or complex dtype (its real part
    for a float one), zero for an integer or boolean one (the cast is piecewise constant)."""
    kind = np.asarray(out).dtype.kind
    if kind == "c":
        return np.array(d, dtype=complex)
    if kind == "f":
        return np.array(np.real(d), dtype=float)  # a complex input's real part is kept
    return np.zeros(np.shape(out))


def partial_binds_no_tangent(tangents: tuple) -> None:
    """Refuses a ``functools.partial`` made in forward mode's code that binds a value whose
    tangent (one of ``tangents``) is not zero: its calls follow the tangents of the
    arguments they are given, not of the ones it binds. A zero tangent (a constant array,
    ``np.ones(3)``, bound where it is made) loses nothing.

    Raises:
        UnsupportedError: where a tangent is not zero (NotImplementedError in a module
            without adgen).
    """
    if all(tangent_is_zero(t) for t in tangents):
        return
    message = ("functools.partial of a value with a derivative: forward mode (jvp) follows "
               "the tangents of the arguments a partial is called with, not of the ones it "
               "binds; pass the value to the function as an argument where it is called")
    try:
        from adgen.errors import UnsupportedError
    except ImportError:  # a standalone module run where adgen is not installed
        raise NotImplementedError(message) from None
    import sys

    # the user's line (looked up, not imported: see helpers_core.unsupported)
    locate = getattr(sys.modules.get("adgen.runtime"), "locate", None)
    err = UnsupportedError(message)
    raise locate(err) if locate is not None else err


def refuse_nonzero_tangent(t: object, message: str, hint: str) -> None:
    """Refuses a call whose argument with the tangent ``t`` is one its rule does not
    differentiate in (``np.var``'s ``ddof``: rules.nondiff_params), where ``t`` is not zero:
    forward mode would drop it, a silent zero. A zero tangent (a constant passed to a helper
    compiled for any arguments) loses nothing.

    Raises:
        UnsupportedError: where ``t`` is not zero (NotImplementedError in a module without
            adgen).
    """
    if tangent_is_zero(t):
        return
    try:
        from adgen.errors import UnsupportedError
    except ImportError:  # a standalone module run where adgen is not installed
        raise NotImplementedError(message) from None
    import sys

    # the user's line (looked up, not imported: see helpers_core.unsupported)
    locate = getattr(sys.modules.get("adgen.runtime"), "locate", None)
    err = UnsupportedError(message, hint=hint)
    raise locate(err) if locate is not None else err


def tangent_is_zero(t: object) -> bool:
    """Whether the tangent ``t`` is zero (None, zeros, or lists, tuples and dicts of them)."""
    if t is None:
        return True
    if isinstance(t, (list, tuple)):
        return all(tangent_is_zero(v) for v in t)
    if isinstance(t, dict):
        return all(tangent_is_zero(v) for v in t.values())
    if isinstance(t, (int, float, complex, np.number, np.ndarray)):
        return not np.any(t)
    return False


def dtype_kind(x: object) -> str:
    """The kind of values ``x`` holds: its dtype's kind for an array ("f", "i", "b", ...),
    "f" for anything else (a number, a list: what a store into it keeps is the value)."""
    return x.dtype.kind if isinstance(x, np.ndarray) else "f"


def float_part(d: object, kind: str) -> object:
    """The tangent ``d`` of a value stored into (or converted to) an array of ``kind``: ``d``
    for a float or complex array, zero for an integer or boolean one (the cast truncates:
    piecewise constant)."""
    if kind == "c" or (kind == "f" and not np.iscomplexobj(d)):
        return d
    if kind == "f":
        return np.real(d)  # stored into (converted to) a real array: the real part
    if kind == "V":
        # rec["a"] = x of a structured array: its tangent has no fields (an IndexError
        # escaped the jvp code); reverse mode refuses it too (adjoints.zeros_like)
        unsupported("a structured array written by field is not supported in forward mode "
                    "(jvp, hessian): keep each field in a float array of its own (a dict of "
                    "arrays)")
    return np.zeros(np.shape(d))
