"""Rules for ``np.fft``: the discrete Fourier transforms and the frequency shifts.

Every transform is linear in its input, so each pullback reads only shapes and the keyword
arguments. The cotangent convention for complex values is JAX's (see
:mod:`adgen.rules.helpers_complex`, where the adjoints are derived): the DFT matrix is
symmetric, so fft's pullback is fft and ifft's is ifft, with the same ``norm``; ``n=`` / ``s=``
pad or truncate the input, and the pullback truncates or pads back. rfft's input is real (its
cotangent is the real part), and irfft's pullback weights the Hermitian half-spectrum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    fft_vjp,
    fftn_vjp,
    irfft_vjp,
    irfftn_vjp,
    rfft_vjp,
    rfftn_vjp,
)
from adgen.rules.registry import defvjp as _defvjp


def defvjp(primal: Any, signature: str, **kwargs: Any) -> Any:
    """``registry.defvjp`` with the rule named ``numpy.fft.NAME`` (the registry names NumPy
    functions ``numpy.NAME``, which for these would read as the module ``numpy.fft``)."""
    return _defvjp(primal, signature, name=f"numpy.fft.{primal.__name__}", **kwargs)

_ONE = "a, n=None, axis=-1, norm=None"
_MANY = "a, s=None, axes=None, norm=None"
_TWO = "a, s=None, axes=(-2, -1), norm=None"


@defvjp(np.fft.fft, _ONE, diff="a", reads="axis, norm", linear=True)
def fft(g: Any, out: Any, a: Any, n: Any, axis: Any, norm: Any) -> Any:
    return fft_vjp(g, np.shape(a), axis, norm, False)


@defvjp(np.fft.ifft, _ONE, diff="a", reads="axis, norm", linear=True)
def ifft(g: Any, out: Any, a: Any, n: Any, axis: Any, norm: Any) -> Any:
    return fft_vjp(g, np.shape(a), axis, norm, True)


@defvjp(np.fft.rfft, _ONE, diff="a", reads="n, axis, norm", linear=True)
def rfft(g: Any, out: Any, a: Any, n: Any, axis: Any, norm: Any) -> Any:
    return rfft_vjp(g, np.shape(a), n, axis, norm)


@defvjp(np.fft.irfft, _ONE, diff="a", reads="n, axis, norm", linear=True)
def irfft(g: Any, out: Any, a: Any, n: Any, axis: Any, norm: Any) -> Any:
    return irfft_vjp(g, np.shape(a), n, axis, norm)


# of a 0-d array (no axes to transform) NumPy returns the array itself
@defvjp(np.fft.fftn, _MANY, diff="a", reads="s, axes, norm", linear=True, view=True)
def fftn(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return fftn_vjp(g, np.shape(a), s, axes, norm, False)


@defvjp(np.fft.ifftn, _MANY, diff="a", reads="s, axes, norm", linear=True, view=True)
def ifftn(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return fftn_vjp(g, np.shape(a), s, axes, norm, True)


@defvjp(np.fft.fft2, _TWO, diff="a", reads="s, axes, norm", linear=True)
def fft2(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return fftn_vjp(g, np.shape(a), s, axes, norm, False)


@defvjp(np.fft.ifft2, _TWO, diff="a", reads="s, axes, norm", linear=True)
def ifft2(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return fftn_vjp(g, np.shape(a), s, axes, norm, True)


@defvjp(np.fft.rfftn, _MANY, diff="a", reads="s, axes, norm", linear=True)
def rfftn(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return rfftn_vjp(g, np.shape(a), s, axes, norm)


@defvjp(np.fft.irfftn, _MANY, diff="a", reads="s, axes, norm", linear=True)
def irfftn(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return irfftn_vjp(g, np.shape(a), s, axes, norm)


@defvjp(np.fft.rfft2, _TWO, diff="a", reads="s, axes, norm", linear=True)
def rfft2(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return rfftn_vjp(g, np.shape(a), s, axes, norm)


@defvjp(np.fft.irfft2, _TWO, diff="a", reads="s, axes, norm", linear=True)
def irfft2(g: Any, out: Any, a: Any, s: Any, axes: Any, norm: Any) -> Any:
    return irfftn_vjp(g, np.shape(a), s, axes, norm)


# The shifts are permutations: each one's pullback is the other.
@defvjp(np.fft.fftshift, "x, axes=None", diff="x", reads="axes", linear=True)
def fftshift(g: Any, out: Any, x: Any, axes: Any) -> Any:
    return np.fft.ifftshift(g, axes)


@defvjp(np.fft.ifftshift, "x, axes=None", diff="x", reads="axes", linear=True)
def ifftshift(g: Any, out: Any, x: Any, axes: Any) -> Any:
    return np.fft.fftshift(g, axes)
