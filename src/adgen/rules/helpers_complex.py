"""Rule helpers: complex values (abs, real, imag, angle, conj of complex arrays) and the FFTs.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).

Cotangents follow JAX's convention: the cotangent of a complex value ``z = x + iy`` is
``dL/dx - i dL/dy``. With it, the pullback of a holomorphic function is ``g * f'(z)`` (no
conjugate), so the rules of add, mul, exp, matmul, sum ... hold for complex values unchanged;
only the functions that are not holomorphic need rules of their own, and those are here.

A real value's cotangent is real: where a pullback lands on a real value through a complex one
(``x`` real, ``z = x * c``: ``x_bar = Re(z_bar * c)``), its real part is taken. The rules whose
*output* is real (abs, real, imag, angle, irfft) take the real part of ``g`` first, and
:func:`cotangent_like` gives a real input its real part (the other rules' pullbacks have real
coefficients for real inputs, so the real part can also be taken later: at accumulation into a
real buffer's shadow, and in the gradient returned for a real argument).
"""

import numpy as np

__all__ = [
    "abs_jvp",
    "abs_jvp_vjp_d",
    "abs_jvp_vjp_x",
    "abs_jvp_tangent_x",
    "abs_vjp",
    "angle_jvp",
    "angle_jvp_dz",
    "angle_jvp_zbar",
    "angle_vjp_dz",
    "angle_vjp",
    "cotangent_as",
    "cotangent_like",
    "fft_axes",
    "fft_vjp",
    "fftn_vjp",
    "fit_lengths",
    "half_spectrum_weights",
    "imag_vjp",
    "irfft_vjp",
    "irfftn_vjp",
    "real_vjp",
    "rfft_vjp",
    "rfftn_vjp",
]


def cotangent_like(ct: object, is_complex: bool) -> object:
    """``ct`` as the cotangent of a complex value (complex dtype, so that accumulating a complex
    cotangent into it later works) or of a real one (its real part)."""
    if is_complex:
        return np.asarray(ct) + 0j if np.ndim(ct) else complex(ct)
    return np.real(ct) if np.iscomplexobj(ct) else ct


def cotangent_as(ct: object, dtype: object) -> object:
    """``ct`` as an array of ``dtype`` (an input's), its real part for a real dtype."""
    if np.iscomplexobj(ct) and np.dtype(dtype).kind != "c":
        ct = np.real(ct)
    return np.asarray(ct, dtype=dtype)


def abs_vjp(g: object, x: object) -> object:
    """Adjoint of ``np.abs(x)``: ``g * sign(x)`` for real x; ``Re(g) * conj(z) / |z|`` for a
    complex z (``|z|`` is not holomorphic). Both use the subgradient 0 at 0."""
    if not np.iscomplexobj(x):
        return g * np.sign(x)
    r = np.abs(x)
    safe = np.where(r == 0, 1.0, r)
    return np.where(r == 0, 0.0, np.real(g) * np.conj(x) / safe)[()]


def abs_jvp(d: object, x: object) -> object:
    """Tangent of ``np.abs(x)``: ``Re(conj(z) dz) / |z|`` (``sign(x) d`` for real x; 0 at 0)."""
    if not np.iscomplexobj(x) and not np.iscomplexobj(d):
        return d * np.sign(x)
    r = np.abs(x)
    safe = np.where(r == 0, 1.0, r)
    return np.where(r == 0, 0.0, np.real(np.conj(x) * d) / safe)[()]


def abs_jvp_vjp_d(g: object, x: object) -> object:
    """Adjoint of ``abs_jvp(d, x)`` in ``d`` (second derivatives through ``np.abs``): the
    tangent is real-linear in d, ``Re(conj(x) d) / |x|``; its adjoint is ``g conj(x) / |x|``
    (``g sign(x)`` for a real x), 0 at 0."""
    if not np.iscomplexobj(x):
        return g * np.sign(x)
    r = np.abs(x)
    return np.where(r == 0, 0.0, g * np.conj(x) / np.where(r == 0, 1.0, r))[()]


def abs_jvp_vjp_x(g: object, out: object, d: object, x: object) -> object:
    """Adjoint of ``abs_jvp(d, x)`` in ``x``: zero for a real x (sign(x) is piecewise
    constant); ``g (conj(d) / |x| - out conj(x) / |x|^2)`` for a complex one, 0 at 0."""
    if not np.iscomplexobj(x) and not np.iscomplexobj(d):
        return np.zeros(np.shape(x)) if np.ndim(x) else 0.0
    r = np.abs(x)
    safe = np.where(r == 0, 1.0, r)
    return np.where(r == 0, 0.0, g * (np.conj(d) / safe - out * np.conj(x) / safe ** 2))[()]


def abs_jvp_tangent_x(dx: object, out: object, d: object, x: object) -> object:
    """The term of ``x``'s tangent in the tangent of ``abs_jvp(d, x)``: zero for a real x;
    ``Re(conj(dx) d) / |x| - out Re(conj(x) dx) / |x|^2`` for a complex one, 0 at 0."""
    if not np.iscomplexobj(x) and not np.iscomplexobj(d) and not np.iscomplexobj(dx):
        return 0.0 * dx
    r = np.abs(x)
    safe = np.where(r == 0, 1.0, r)
    return np.where(r == 0, 0.0, np.real(np.conj(dx) * d) / safe -
                    out * np.real(np.conj(x) * dx) / safe ** 2)[()]


def real_vjp(g: object, is_complex: bool) -> object:
    """Adjoint of ``np.real(val)`` / ``val.real``: ``Re(g)``, complex for a complex val."""
    return cotangent_like(np.real(g), is_complex)


def imag_vjp(g: object, is_complex: bool, shape: tuple) -> object:
    """Adjoint of ``np.imag(val)`` / ``val.imag``: ``-i Re(g)`` for a complex val (its
    imaginary part moved by Re(g)), zero for a real val (whose imaginary part is 0)."""
    if not is_complex:
        return np.real(g) * np.zeros(shape)
    return -1j * np.real(g) * np.ones(shape)


def angle_vjp(g: object, z: object, deg: bool) -> object:
    """Adjoint of ``np.angle(z, deg)``: ``-i Re(g) conj(z) / |z|^2`` (from d atan2(y, x));
    zero for a real z (the angle is 0 or pi, piecewise constant) and at z == 0."""
    scale = 180.0 / np.pi if deg else 1.0
    if not np.iscomplexobj(z):
        return np.real(g) * np.zeros(np.shape(z))
    r2 = np.real(z * np.conj(z))
    safe = np.where(r2 == 0, 1.0, r2)
    return np.where(r2 == 0, 0.0, -1j * scale * np.real(g) * np.conj(z) / safe)[()]


def angle_jvp(d: object, z: object, deg: bool) -> object:
    """Tangent of ``np.angle(z, deg)``: ``Im(conj(z) dz) / |z|^2`` (0 at z == 0)."""
    scale = 180.0 / np.pi if deg else 1.0
    r2 = np.real(z * np.conj(z))
    safe = np.where(r2 == 0, 1.0, r2)
    return np.where(r2 == 0, 0.0, scale * np.imag(np.conj(z) * d) / safe)[()]


def angle_jvp_dz(d: object, dz: object, z: object, deg: bool) -> object:
    """Tangent of :func:`angle_jvp` ``(d, z, deg)`` along ``z``'s tangent ``dz``:
    ``(Im(conj(dz) d) - 2 Im(conj(z) d) Re(conj(z) dz) / |z|^2) / |z|^2`` (0 at z == 0)."""
    scale = 180.0 / np.pi if deg else 1.0
    r2 = np.real(z * np.conj(z))
    safe = np.where(r2 == 0, 1.0, r2)
    t = np.imag(np.conj(dz) * d) - 2.0 * np.imag(np.conj(z) * d) * np.real(np.conj(z) * dz) / safe
    return np.where(r2 == 0, 0.0, scale * t / safe)[()]


def angle_jvp_zbar(g: object, d: object, z: object, deg: bool) -> object:
    """Adjoint of :func:`angle_jvp` ``(d, z, deg)`` in ``z`` (reverse over forward of
    ``np.angle``): ``Re(g) (i conj(d) - 2 Im(conj(z) d) conj(z) / |z|^2) / |z|^2``; zero for a
    real z (as :func:`angle_vjp`) and at z == 0."""
    scale = 180.0 / np.pi if deg else 1.0
    if not np.iscomplexobj(z):
        return np.real(g) * np.zeros(np.shape(z))
    r2 = np.real(z * np.conj(z))
    safe = np.where(r2 == 0, 1.0, r2)
    t = 1j * np.conj(d) - 2.0 * np.imag(np.conj(z) * d) * np.conj(z) / safe
    return np.where(r2 == 0, 0.0, scale * np.real(g) * t / safe)[()]


def angle_vjp_dz(g: object, dz: object, z: object, deg: bool) -> object:
    """Tangent of :func:`angle_vjp` ``(g, z, deg)`` along ``z``'s tangent ``dz`` (forward
    over reverse of ``np.angle``): ``-i Re(g) (conj(dz) - 2 conj(z) Re(conj(z) dz) / |z|^2) /
    |z|^2``; zero for a real z and at z == 0."""
    scale = 180.0 / np.pi if deg else 1.0
    if not np.iscomplexobj(z):
        return np.real(g) * np.zeros(np.shape(z))
    r2 = np.real(z * np.conj(z))
    safe = np.where(r2 == 0, 1.0, r2)
    t = np.conj(dz) - 2.0 * np.conj(z) * np.real(np.conj(z) * dz) / safe
    return np.where(r2 == 0, 0.0, -1j * scale * np.real(g) * t / safe)[()]


# --------------------------------------------------------------------------------------------
# The FFTs. The DFT matrix is symmetric, so the transpose of fft is fft (same norm) and that of
# ifft is ifft; what is left is the zero-padding or truncation that ``n=`` / ``s=`` applies to
# the input, whose transpose is the truncation or padding back to the input's length.


def fit_lengths(g: object, shape: tuple, axes: tuple) -> np.ndarray:
    """``g`` truncated or zero-padded along each of ``axes`` to ``shape``'s length there."""
    g = np.asarray(g)
    for ax in axes:
        want = shape[ax]
        have = g.shape[ax]
        if have > want:
            g = np.take(g, np.arange(want), axis=ax)
        elif have < want:
            pad = [(0, 0)] * g.ndim
            pad[ax] = (0, want - have)
            g = np.pad(g, pad)
    return g


def fft_axes(ndim: int, s: object, axes: object) -> tuple:
    """The axes an n-dimensional FFT transforms (NumPy's defaults), as non-negative ints."""
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    elif np.ndim(axes) == 0:
        axes = (axes,)
    return tuple(int(a) % ndim for a in axes)


def fft_vjp(g: object, shape: tuple, axis: int, norm: object, inverse: bool) -> np.ndarray:
    """Adjoint of ``np.fft.fft`` / ``ifft`` (``inverse``) of an input of ``shape``."""
    ax = axis % len(shape)
    ct = np.fft.ifft(g, axis=ax, norm=norm) if inverse else np.fft.fft(g, axis=ax, norm=norm)
    return fit_lengths(ct, shape, (ax,))


def fftn_vjp(g: object, shape: tuple, s: object, axes: object, norm: object,
             inverse: bool) -> np.ndarray:
    """Adjoint of ``np.fft.fftn`` / ``ifftn`` / ``fft2`` / ``ifft2`` of an input of ``shape``."""
    used = fft_axes(len(shape), s, axes)
    ct = np.fft.ifftn(g, axes=used, norm=norm) if inverse else \
        np.fft.fftn(g, axes=used, norm=norm)
    return fit_lengths(ct, shape, used)


def rfft_vjp(g: object, shape: tuple, n: object, axis: int, norm: object) -> np.ndarray:
    """Adjoint of ``np.fft.rfft``: rfft is fft followed by keeping the first n//2 + 1 entries,
    so its transpose pads ``g`` with zeros to n and applies fft; the input is real, so the
    cotangent is the real part."""
    ax = axis % len(shape)
    length = shape[ax] if n is None else n
    return fit_lengths(np.real(np.fft.fft(g, n=length, axis=ax, norm=norm)), shape, (ax,))


def rfftn_vjp(g: object, shape: tuple, s: object, axes: object, norm: object) -> np.ndarray:
    """Adjoint of ``np.fft.rfftn`` / ``rfft2``: as :func:`rfft_vjp`, the last transformed axis
    halved, the others full."""
    used = fft_axes(len(shape), s, axes)
    lengths = [shape[a] for a in used] if s is None else list(s)
    return fit_lengths(np.real(np.fft.fftn(g, s=lengths, axes=used, norm=norm)), shape, used)


def half_spectrum_weights(n: int, m: int, ndim: int, ax: int) -> np.ndarray:
    """The weights of the m stored entries of a Hermitian spectrum of length n: 1 for the
    zero frequency (and for n/2 when n is even), 2 for the others, which stand for a pair of
    conjugate frequencies k and n - k; shaped to broadcast along axis ``ax``."""
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * ndim
    shape[ax] = m
    return w.reshape(shape)


def irfft_vjp(g: object, shape: tuple, n: object, axis: int, norm: object) -> np.ndarray:
    """Adjoint of ``np.fft.irfft`` of a Hermitian half-spectrum of ``shape``.

    irfft of (a_0 .. a_{m-1}) is ``(1/n) (Re a_0 + 2 sum_k Re(a_k e^{2 pi i jk/n}) [+ Re
    a_{n/2} (-1)^j])``: the derivatives give ``w_k ifft(g)_k`` with the weights of
    :func:`half_spectrum_weights` (the imaginary parts of a_0 and a_{n/2}, which irfft drops, get
    ifft(g)'s real entries there: 0). ``norm`` scales as ifft does."""
    ax = axis % len(shape)
    length = 2 * (shape[ax] - 1) if n is None else n
    m = length // 2 + 1
    full = np.fft.ifft(np.real(g), axis=ax, norm=norm)
    half = np.take(full, np.arange(m), axis=ax) * half_spectrum_weights(length, m, len(shape), ax)
    return fit_lengths(half, shape, (ax,))


def irfftn_vjp(g: object, shape: tuple, s: object, axes: object, norm: object) -> np.ndarray:
    """Adjoint of ``np.fft.irfftn`` / ``irfft2``: ifft over the other axes (its own
    transpose) and :func:`irfft_vjp`'s weighted half over the last transformed axis."""
    used = fft_axes(len(shape), s, axes)
    last = used[-1]
    length = 2 * (shape[last] - 1) if s is None else s[-1]
    m = length // 2 + 1
    full = np.fft.ifftn(np.real(g), axes=used, norm=norm)
    half = np.take(full, np.arange(m), axis=last) * half_spectrum_weights(length, m, len(shape), last)
    return fit_lengths(half, shape, used)
