"""ndarray methods and attributes that are operations, mapped to the functions with rules.

``x.sum(axis=0)`` is ``np.sum(x, axis=0)``: the receiver becomes the first positional
argument and the call's other arguments follow unchanged. The mapping holds for receivers
that are ndarrays (or numpy scalars); a list's ``.copy()`` or a dict's ``.copy()`` is not
``np.copy``, so the compiler must apply it only when the receiver is an array at run time.

``VARARG_METHODS`` names the methods that take their shape or axes either as one tuple or as
separate positional arguments (``x.reshape(2, 3)``, ``x.transpose(1, 0)``) and the parameter
those arguments fill: with two or more positional arguments the compiler packs them into one
tuple (``np.reshape(x, (2, 3))``); with one, it passes that argument as is.

``ATTRIBUTES`` maps attribute reads that compute something (``x.T``) to the function called
with the receiver alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.rules.helpers import (
    ndarray_astype,
    ndarray_compress,
    ndarray_conj,
    ndarray_flatten,
    ndarray_item,
    ndarray_tolist,
    ndarray_view,
)

METHODS: dict[str, Callable[..., Any]] = {
    # reductions
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "argsort": np.argsort,
    "argpartition": np.argpartition,
    "all": np.all,
    "any": np.any,
    # products
    "dot": np.dot,
    "trace": np.trace,
    "diagonal": np.diagonal,
    # shape
    "reshape": np.reshape,
    "transpose": np.transpose,
    "swapaxes": np.swapaxes,
    "ravel": np.ravel,
    "flatten": ndarray_flatten,  # always a copy, unlike ravel
    "squeeze": np.squeeze,
    # values
    "take": np.take,
    "compress": ndarray_compress,
    "copy": np.copy,
    "clip": np.clip,
    "repeat": np.repeat,
    "conj": ndarray_conj,  # the receiver itself for a real array, unlike np.conjugate
    "conjugate": ndarray_conj,
    "round": np.round,
    "astype": ndarray_astype,
    "view": ndarray_view,  # x.view(), x.view(np.ndarray): x's memory (x.view(dtype) is refused)
    "item": ndarray_item,
    "tolist": ndarray_tolist,
}

# Methods a class of the user's often has too (a camera's ``view()``): taken for the ndarray
# method only where the receiver is known to be an ndarray when compiling (the signature's
# kinds); elsewhere adgen's dispatch maps the call when it runs, an ndarray's to its rule
# and a user object's to its own method.
ARRAY_RECEIVER_ONLY = frozenset({"view"})

VARARG_METHODS: dict[str, str] = {
    "reshape": "shape",
    "transpose": "axes",
}

ATTRIBUTES: dict[str, Callable[..., Any]] = {
    "T": np.transpose,
    "mT": np.matrix_transpose,  # NumPy 2's stack of transposes (a view, like x.T)
    "flat": np.ravel,  # read as the array's items in C order (writes through it are refused)
    "real": np.real,
    "imag": np.imag,
}
