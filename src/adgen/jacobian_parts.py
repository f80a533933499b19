"""The pieces Jacobians and Hessians are assembled from (``higher_order``, ``third_order``):
the unit tangents of an argument (``basis``), a derivative from its columns in the argument's
precision (``columns``, ``like_argument``), the runs of ``f`` a derivative takes, each from
the same values (``Runs``, ``copies``), and the refusals of what they do not take: a tuple,
list, dict or object as the argument or the output, and an argument sharing memory with
another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.arguments import describe, location_of, refuse_foreign_array
from adgen.errors import NonDifferentiableError

__all__ = ["Runs", "basis", "columns", "copies", "like_argument", "refuse_aliased_arguments",
           "refuse_structured", "refuse_structured_output"]


def refuse_aliased_arguments(args: tuple[Any, ...], n: int, fun: Callable[..., Any]) -> None:
    """Refuses second derivatives with respect to an array argument that shares memory with
    another argument (hessian(f)(z, z)): the Hessian-vector products moved argument n's
    buffer alone, and gave half of what the differences of grad(f) give (4 for 8 on
    f(a, b) = sum(2a * b) after a *= 2).

    Raises:
        NonDifferentiableError: naming the two arguments and what to write instead.
    """
    x = args[n]
    if not isinstance(x, np.ndarray):
        return
    for m, y in enumerate(args):
        if m != n and isinstance(y, np.ndarray) and np.may_share_memory(x, y):
            raise NonDifferentiableError(
                f"second derivatives with respect to argument {n}, which shares memory with "
                f"argument {m} (the same array, or views of one buffer), are not supported",
                location_of(fun),
                hint="differentiate a function of the array once: adgen.hessian(lambda w: "
                     "f(w, w))(z), or pass a copy for the other argument")


def basis(x: Any) -> list[Any]:
    """Unit tangents of a number or an array, one per element (C order)."""
    if isinstance(x, np.ndarray):
        out = []
        for k in range(x.size):
            e = np.zeros(x.size)
            e[k] = 1.0
            out.append(e.reshape(x.shape))
        return out
    refuse_structured(x)
    return [1.0]


def refuse_structured_output(out: Any, name: str, stackable: bool = True) -> None:
    """Refuses a function whose output is a tuple, list, dict or object: a Jacobian has the
    output's shape followed by the argument's (JAX returns a pytree of them). With
    ``stackable``, a list or tuple of numbers or of arrays of one shape is taken as their
    stack (jacfwd's columns are stacked; jacrev's pullback takes one cotangent per item)."""
    if isinstance(out, (np.ndarray, float, int, np.number)) and not isinstance(out, bool):
        return
    if stackable and isinstance(out, (list, tuple)):
        try:  # numbers, or arrays of one shape: a Jacobian of the stacked output, as before
            np.asarray(out, dtype=float)
            return
        except (TypeError, ValueError):
            pass
    raise NonDifferentiableError(
        f"{name} takes the Jacobian of a function returning a number or an array, and this "
        f"one returned {describe(out)}",
        hint="take the Jacobian of each output separately (adgen.jacrev(lambda x: f(x)[0])), "
             "or return one array (np.concatenate / np.stack the outputs)")


def refuse_structured(x: Any) -> None:
    """Refuses a list, dict, tuple or object as the argument of a Jacobian or Hessian (its
    rows and columns would need a layout; JAX returns a pytree of them). ``jacfwd``,
    ``jacrev``, ``jacobian`` and ``hessian`` take a dict, list or tuple
    (:mod:`adgen.jacobian_trees`) and call this for anything else."""
    if isinstance(x, np.ndarray) or isinstance(x, (float, int, np.number)) and \
            not isinstance(x, bool):
        return
    refuse_foreign_array(x, None)  # a torch tensor, a JAX array: named, with the conversion
    raise NonDifferentiableError(f"a Jacobian or Hessian is taken with respect to numbers and "
                                 f"arrays, not {describe(x)}",
                                 hint="pass the arrays as separate arguments (argnums=(0, 1)), "
                                      "or use adgen.grad / adgen.vjp, which take structures")


def copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    import copy

    return copy.deepcopy(args)


class Runs:
    """The arguments of each of the runs of ``f`` a derivative takes (a jvp per column of a
    Jacobian, an hvp per column of a Hessian): the arguments themselves for the first run,
    and copies of their values from before it for the others. So every derivative leaves its
    arguments as one plain call of ``f`` does, as ``grad`` does (a function that writes an
    argument in place writes it once), and every run starts from the same values."""

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args, self.before = tuple(args), copies(tuple(args))
        self.first = True

    def next(self) -> tuple[Any, ...]:
        if self.first:
            self.first = False
            return self.args
        return copies(self.before)


def columns(out_dots: list[Any], out: Any, x: Any) -> Any:
    """A Jacobian from its columns (one tangent per element of ``x``): out's shape + x's."""
    cols = np.stack([np.asarray(d, dtype=float) for d in out_dots], axis=-1)
    return like_argument(cols.reshape(np.shape(out) + np.shape(x)), x)


def like_argument(derivative: np.ndarray, x: Any) -> np.ndarray:
    """A Jacobian or Hessian with respect to ``x`` in x's precision: float32 (float16) for a
    float32 (float16) array or NumPy scalar, as its gradient is (adjoints.as_gradient); the
    float64 it was computed in for anything else."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype != derivative.dtype:
        return derivative.astype(dtype)
    return derivative
