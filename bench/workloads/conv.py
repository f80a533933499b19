"""A naive 2-D convolution (valid correlation) in four nested loops: 8 x 8 image, 3 x 3 kernel.

``out[i, j] += ...`` accumulates in place 324 times; the update is linear, so no copy is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

IMG, KER = 8, 3


def conv(img, k):
    n_out = len(img) - len(k) + 1
    out = np.zeros((n_out, n_out))
    for i in range(n_out):
        for j in range(n_out):
            for a in range(len(k)):
                for b in range(len(k)):
                    out[i, j] += img[i + a, j + b] * k[a, b]
    return np.sum(np.tanh(out))


def conv_functional(img, k):
    """Each output pixel is a local sum; rows and the image are stacked from lists."""
    n_out = len(img) - len(k) + 1
    rows = []
    for i in range(n_out):
        row = []
        for j in range(n_out):
            acc = 0.0
            for a in range(len(k)):
                for b in range(len(k)):
                    acc = acc + img[i + a, j + b] * k[a, b]
            row.append(acc)
        rows.append(np.stack(row))
    out = np.stack(rows)
    return np.sum(np.tanh(out))


def conv_hand(img, k):
    """Sliding windows and two contractions; the image gradient is nine shifted adds."""
    windows = np.lib.stride_tricks.sliding_window_view(img, k.shape)
    t = np.tanh(np.einsum("ijab,ab->ij", windows, k))
    _value = np.sum(t)
    out_bar = 1.0 - t * t
    k_bar = np.einsum("ijab,ij->ab", windows, out_bar)
    img_bar = np.zeros_like(img)
    n_out = len(out_bar)
    for a in range(len(k)):
        for b in range(len(k)):
            img_bar[a:a + n_out, b:b + n_out] += k[a, b] * out_bar
    return img_bar, k_bar


def conv_hand_loop(img, k):
    n_out = len(img) - len(k) + 1
    out = np.zeros((n_out, n_out))
    for i in range(n_out):
        for j in range(n_out):
            for a in range(len(k)):
                for b in range(len(k)):
                    out[i, j] += img[i + a, j + b] * k[a, b]
    t = np.tanh(out)
    _value = np.sum(t)
    out_bar = 1.0 - t * t
    img_bar = np.zeros_like(img)
    k_bar = np.zeros_like(k)
    for i in reversed(range(n_out)):
        for j in reversed(range(n_out)):
            for a in reversed(range(len(k))):
                for b in reversed(range(len(k))):
                    img_bar[i + a, j + b] += out_bar[i, j] * k[a, b]
                    k_bar[a, b] += out_bar[i, j] * img[i + a, j + b]
    return img_bar, k_bar


def conv_torch(img, k):
    n_out = len(img) - len(k) + 1
    out = torch.zeros((n_out, n_out), dtype=torch.float64)
    for i in range(n_out):
        for j in range(n_out):
            for a in range(len(k)):
                for b in range(len(k)):
                    out[i, j] += img[i + a, j + b] * k[a, b]
    return torch.sum(torch.tanh(out))


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return rng.standard_normal((IMG, IMG)), 0.3 * rng.standard_normal((KER, KER))


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    n_out = IMG - KER + 1
    return [Workload("conv", LOOP, sys.modules[__name__], conv, (0, 1), make_args, conv_hand,
                     hand_loop=conv_hand_loop, functional=conv_functional,
                     torch_port=conv_torch,
                     size=f"{IMG}x{IMG} image, {KER}x{KER} kernel",
                     loop_iters=n_out * n_out * KER * KER)]
