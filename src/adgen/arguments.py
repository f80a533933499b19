"""What the API takes: a function (and the receiver a method passes first), ``argnums``, and
which arguments and cotangents can carry a gradient; refusals name what cannot.

Shared by the first-order API (``api.py``) and the higher-order one (``higher_order.py``).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adgen.errors import ArgnumsError, CotangentError, Location, NonDifferentiableError
from adgen.runtime import is_function_like
from adgen.transforms.library_wrappers import library_target

POLICIES = ("save", "strict")


def check_policy(mutation: str) -> None:
    if mutation not in POLICIES:
        raise ValueError(f"mutation must be one of {POLICIES}, not {mutation!r}")



def primal_function(fun: Callable[..., Any]) -> Callable[..., Any]:
    fun = getattr(fun, "__adgen_primal__", fun)
    # (adgen.grad(np.interp): its reference implementation; np.ndarray.sum: refused)
    return library_target(split_receiver(fun)[0])


def split_receiver(fun: Callable[..., Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A bound method (``model.loss``, ``Cls.make`` of a classmethod) or a callable object
    (``layer`` with a ``__call__``) as the function Python runs and the receiver it passes
    first; a function as itself (a numba.njit dispatcher: its Python function)."""
    if type(fun).__module__.startswith("numba.") and hasattr(fun, "py_func"):
        fun = fun.py_func
    if isinstance(fun, types.MethodType) and isinstance(fun.__func__, types.FunctionType):
        from adgen.transforms.bound_callees import bound_method_for

        # (a copy for the object's class where the method calls methods of it: self.step(u)
        # writing u is then followed; transforms/bound_callees.py)
        return bound_method_for(fun.__func__, fun.__self__), (fun.__self__,)
    if not isinstance(fun, (types.FunctionType, types.BuiltinFunctionType, type,
                            functools.partial)) and callable(fun):
        call = getattr(type(fun), "__call__", None)
        if isinstance(call, types.FunctionType):
            _refuse_library_object(fun)
            return call, (fun,)
    return fun, ()


def _refuse_library_object(fun: Any) -> None:
    """An np.vectorize object passed to adgen directly: refused by name (its __call__ was
    compiled from NumPy's source and refused at a line inside NumPy)."""
    from adgen.errors import MissingRuleError
    from adgen.rules import registry

    refused = registry.refusal_of(type(fun))
    if isinstance(fun, np.vectorize):
        # (called inside a function, it is the loop NumPy runs: composites_callbacks)
        raise MissingRuleError("a vectorize object (numpy.vectorize) passed to adgen directly "
                               "is not differentiated", hint="differentiate a function that "
                               "calls it: adgen.grad(lambda x: np.sum(vf(x)))")
    if refused is not None:
        raise MissingRuleError(f"a {type(fun).__name__} object ({type(fun).__module__}."
                               f"{type(fun).__qualname__}) has no derivative rule: {refused}")


def shift_argnums(argnums: Any, by: int) -> Any:
    """argnums of a method's arguments as argnums of its function (self first)."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return argnums + by if argnums >= 0 else argnums
    if isinstance(argnums, (tuple, list)):
        return tuple(shift_argnums(n, by) for n in argnums)
    return argnums  # refused by normalize_argnums


def normalize_argnums(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise ArgnumsError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ArgnumsError("argnums is empty: name at least one argument to differentiate")
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise ArgnumsError(f"argnums must be ints, got {n!r}")
        if not -nargs <= n < nargs:
            raise ArgnumsError(f"argnums {n} is out of range for a call with {nargs} positional "
                               "argument(s)")
    return tuple(n % nargs for n in nums)



# Array types of other libraries, by the top package of their class's module: the way out
# that library's users take (a tensor's values as a NumPy array, or adgen inside their
# library's autodiff through adgen.interop).
_FOREIGN_ARRAYS = {
    "torch": ("a torch.Tensor", "x.detach().numpy()",
              "or wrap f with adgen.interop.torch_function(f) to use it on tensors inside "
              "torch's autograd"),
    "jax": ("a JAX array", "np.asarray(x)",
            "or wrap f with adgen.interop.jax_function(f) to use it inside jax.grad / jax.jit"),
    "jaxlib": ("a JAX array", "np.asarray(x)",
               "or wrap f with adgen.interop.jax_function(f) to use it inside jax.grad / "
               "jax.jit"),
    "tensorflow": ("a TensorFlow tensor", "x.numpy()", ""),
    "cupy": ("a CuPy array", "x.get()", ""),
    "dask": ("a Dask array", "x.compute()",
             "or send the gradient to Dask's workers (client.map(adgen.grad(f), ...)); see "
             "docs/interop.md"),
}


def refuse_foreign_array(value: Any, position: int | None) -> None:
    """Raises NonDifferentiableError naming the library and the conversion when an argument
    is another library's array (a torch tensor, a JAX array): adgen differentiates NumPy code
    run on NumPy arrays. (It was 'holds no float or float array', hint 'leave this position
    out of argnums'; jvp of one crashed in adgen's code.)"""
    if isinstance(value, (np.ndarray, np.generic, float, int, complex)):
        return
    top = (getattr(type(value), "__module__", "") or "").split(".")[0]
    known = _FOREIGN_ARRAYS.get(top)
    if known is None:
        return
    what, convert, other = known
    raise NonDifferentiableError(
        f"{'the argument' if position is None else f'argument {position}'} is {what} "
        f"({type(value).__module__}.{type(value).__qualname__}): "
        "adgen differentiates NumPy code run on NumPy arrays",
        hint=f"pass its values as a NumPy array ({convert}){', ' + other if other else ''}")


def check_differentiable(value: Any, position: int) -> None:
    """Raises NonDifferentiableError when an argument has no floating-point content."""
    if type(value) is float or (type(value) is np.ndarray and value.dtype.kind == "f"):
        return  # the common case, checked first
    refuse_foreign_array(value, position)
    leaves = leaves_of(value)
    if isinstance(value, (list, tuple, dict)) or (
            hasattr(value, "__dict__") and not isinstance(value, (np.ndarray, np.generic))):
        # a container or object: ints and strings inside it get no gradient; it is refused
        # only when nothing in it can have one
        if any(has_float(leaf) for leaf in leaves):
            return
        raise NonDifferentiableError(
            f"argument {position} ({type(value).__name__}) holds no float or float array",
            hint="leave this position out of argnums")
    if not leaves or all(leaf is None for leaf in leaves):
        raise NonDifferentiableError(f"argument {position} is {value!r}: it has no float "
                                     "content to differentiate",
                                     hint="leave this position out of argnums")
    for leaf in leaves:
        if leaf is not None and not isinstance(leaf, (float, int, complex, str, np.ndarray,
                                                      np.generic)) and \
                not hasattr(leaf, "__dict__"):
            raise NonDifferentiableError(
                f"argument {position} is a {type(leaf).__name__}: it has no gradient",
                hint="pass floats or float arrays, or leave this position out of argnums")
        if type(leaf) is object:
            raise NonDifferentiableError(
                f"argument {position} is a plain object: it has no gradient",
                hint="pass floats or float arrays, or leave this position out of argnums")
        if isinstance(leaf, (bool, np.bool_)) or (
            isinstance(leaf, (int, np.integer))
        ):
            raise NonDifferentiableError(
                f"argument {position} is {type(leaf).__name__} {leaf!r}: integers and bools have "
                "no gradient",
                hint="pass a float (e.g. 3.0 or x.astype(float)), or leave this position out of "
                "argnums")
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind not in "fc":
            raise NonDifferentiableError(
                f"argument {position} is an array of dtype {leaf.dtype.name}: adgen "
                "differentiates float and complex arrays",
                hint="convert with x.astype(np.float64), or leave this position out of argnums")
        if isinstance(leaf, str):
            raise NonDifferentiableError(f"argument {position} is a str: it has no gradient",
                                         hint="leave this position out of argnums")


def has_float(leaf: Any) -> bool:
    """Whether a leaf has a gradient: a float or complex number or array (a complex one's is
    dL/dx - i dL/dy, JAX's convention)."""
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind in "fc"
    return isinstance(leaf, (float, complex, np.floating, np.complexfloating))


def has_complex(args: tuple[Any, ...]) -> bool:
    """Whether an argument is or holds a complex number or array: its pullback then runs
    with the checks of :func:`may_be_complex` code, whatever its source says."""
    return any(isinstance(leaf, (complex, np.complexfloating)) or (
        isinstance(leaf, np.ndarray) and leaf.dtype.kind == "c")
        for a in args for leaf in leaves_of(a))


def leaves_of(value: Any) -> list[Any]:
    """The values a list, tuple, dict or object argument holds, all the way down, in order.
    Each container or object is entered once: objects that refer to each other (a tree's
    node and its parent) give each leaf once instead of recursing forever."""
    leaves: list[Any] = []
    entered: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            inside = list(v)
        elif isinstance(v, dict):
            inside = list(v.values())
        elif hasattr(v, "__dict__") and not isinstance(v, (np.ndarray, np.generic, type)) \
                and not is_function_like(v) and vars(v):
            inside = list(vars(v).values())
        else:
            leaves.append(v)
            continue
        if id(v) not in entered:
            entered.add(id(v))
            stack.extend(reversed(inside))
    return leaves


def refuse_complex_jacobian(args: tuple[Any, ...], what: str) -> None:
    """Refuses a complex argument to a Jacobian, a Hessian or a derivative of a gradient, as
    JAX does unless ``holomorphic=True``: these are built from real tangents and real unit
    cotangents."""
    if has_complex(args):
        raise NonDifferentiableError(
            f"{what} of a function of a complex argument is not supported: it is built from "
            "real tangents and cotangents (JAX refuses it too unless holomorphic=True)",
            hint="use adgen.grad or adgen.vjp, which take complex arguments, or pass the real "
                 "and imaginary parts as two real arguments")


def refuse_subclasses(args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
    """Refuses the values whose kinds the signature leaves unknown and adgen cannot
    differentiate: array subclasses (np.matrix, masked arrays), whose operators mean something
    else than the rules assume (``*`` is a matrix product for np.matrix). Complex values are
    differentiated (JAX's convention)."""
    for k, a in enumerate(args):
        leaves = leaves_of(a)
        for leaf in leaves:
            if is_array_subclass(leaf):
                what = f"{type(leaf).__module__}.{type(leaf).__qualname__}"
                inside = "" if leaf is a else f" holds a {what}, which"
                raise NonDifferentiableError(
                    f"argument {k}{inside or ' is a ' + what + ', which'} is an ndarray "
                    "subclass: adgen differentiates plain ndarrays, and a subclass's "
                    "operators may mean something else (np.matrix: * is a matrix product; "
                    "a masked array skips masked elements)",
                    hint="pass np.asarray(x) (for a masked array: x.filled(value), or the "
                         "mask as a separate argument used with np.where)")
    for key, value in (kwargs or {}).items():
        # keyword arguments get no gradient, but a subclass's operators still run in the
        # forward pass the rules' pullbacks assume plain (a masked sum skips elements)
        for leaf in leaves_of(value):
            if is_array_subclass(leaf):
                raise NonDifferentiableError(
                    f"keyword argument {key!r} is or holds a {type(leaf).__module__}."
                    f"{type(leaf).__qualname__}, an ndarray subclass: adgen differentiates "
                    "plain ndarrays, and a subclass's operators may mean something else "
                    "(np.matrix: * is a matrix product; a masked array skips masked elements)",
                    hint="pass np.asarray(x) (for a masked array: x.filled(value), or the "
                         "mask as a separate argument used with np.where)")



def is_array_subclass(value: Any) -> bool:
    """Whether ``value`` is an array of an ndarray subclass adgen refuses (np.matrix, a masked
    array; not np.memmap, which computes as an ndarray)."""
    return isinstance(value, np.ndarray) and type(value) is not np.ndarray and \
        not isinstance(value, np.memmap)


def describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"



def check_cotangent(ct: Any, out: Any, what: str, fun: Callable[..., Any]) -> None:
    """Raises CotangentError unless ``ct`` fits the output ``out``: a real number or array of
    its shape for a float or an array, the same structure for a tuple, list or dict, None
    (or a number, ignored) for an output without a gradient (an int, a str, None)."""

    def refuse(problem: str) -> None:
        raise CotangentError(f"{what} {problem}", location_of(fun),
                             hint="pass the pullback a cotangent of the output's structure "
                                  "and shape, of a float dtype (np.ones_like(out) for an "
                                  "array output)")

    if isinstance(out, (float, complex, np.floating, np.complexfloating)) or (
            isinstance(out, np.ndarray) and out.dtype.kind in "fc"):
        if ct is None or isinstance(ct, (str, bytes, bool, np.bool_)) or not (
                isinstance(ct, (int, float, complex, np.number, np.ndarray))):
            refuse(f"is {describe(ct) if ct is not None else 'None'}, but the output is "
                   f"{describe(out)}")
        complex_out = np.iscomplexobj(out)  # a complex output takes a complex cotangent
        if isinstance(ct, np.ndarray) and ct.dtype.kind not in ("fiuc" if complex_out else
                                                                 "fiu") or \
                (isinstance(ct, (complex, np.complexfloating)) and not complex_out):
            refuse(f"has dtype {np.asarray(ct).dtype}; a real (float) cotangent is needed")
        if np.shape(ct) != np.shape(out):
            refuse(f"has shape {np.shape(ct)}, but the output has shape {np.shape(out)}")
        return
    if isinstance(out, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(out):
            refuse(f"is {describe(ct)}, but the output is a {type(out).__name__} of "
                   f"{len(out)} items: give one cotangent per item")
        for k, (c, o) in enumerate(zip(ct, out)):
            check_cotangent(c, o, f"{what}[{k}]", fun)
        return
    if isinstance(out, dict):
        if not isinstance(ct, dict) or set(ct) - set(out):
            refuse(f"is {describe(ct)}, but the output is a dict with keys {list(out)}")
        for k, c in ct.items():
            check_cotangent(c, out[k], f"{what}[{k!r}]", fun)
        return
    if out is None or isinstance(out, (str, bytes)):
        if ct is not None:
            refuse(f"is {describe(ct)}, but the output is {describe(out)}, which has no "
                   "gradient: pass None")


def location_of(fun: Callable[..., Any]) -> Location | None:
    """Where ``fun`` is defined: its first line (the ``def``, or its first decorator), with
    that line's text, so that a message about the function shows the user's line."""
    code = getattr(primal_function(fun), "__code__", None)
    if code is None:
        return None
    import linecache

    return Location(code.co_filename, code.co_firstlineno, 0,
                    linecache.getline(code.co_filename, code.co_firstlineno))
