"""Negative log marginal likelihood of a Gaussian process, 100 points in 3-D, via Cholesky.

Gradient wrt the three log hyperparameters (length scale, signal and noise amplitudes) of a
squared-exponential kernel: ``K = sf^2 exp(-|x - x'|^2 / (2 ell^2)) + sn^2 I``,
``L = np.linalg.cholesky(K)``, two triangular solves, ``sum(log(diag(L)))``. Vectorised.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import VECTORISED, Workload

torch: Any = None  # bound by the torch adapter

POINTS, DIMS = 100, 3


def gp_nll(theta, X, y):
    ell = np.exp(theta[0])
    sf2 = np.exp(2.0 * theta[1])
    sn2 = np.exp(2.0 * theta[2])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    K = sf2 * np.exp(-0.5 * d2 / ell ** 2) + sn2 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def gp_nll_hand(theta, X, y):
    """dNLL/dK = (K^-1 - alpha alpha^T) / 2, contracted with dK/dtheta_i (Rasmussen 5.9)."""
    ell = np.exp(theta[0])
    sf2 = np.exp(2.0 * theta[1])
    sn2 = np.exp(2.0 * theta[2])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    se = sf2 * np.exp(-0.5 * d2 / ell ** 2)
    K = se + sn2 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    L_inv = np.linalg.solve(L, np.eye(len(y)))
    K_bar = 0.5 * (L_inv.T @ L_inv - np.outer(alpha, alpha))
    return (np.array([np.sum(K_bar * se * d2) / ell ** 2, 2.0 * np.sum(K_bar * se),
                      2.0 * sn2 * np.trace(K_bar)]),)


def gp_nll_torch(theta, X, y):
    ell = torch.exp(theta[0])
    sf2 = torch.exp(2.0 * theta[1])
    sn2 = torch.exp(2.0 * theta[2])
    d2 = torch.sum((X[:, None, :] - X[None, :, :]) ** 2, dim=2)
    K = sf2 * torch.exp(-0.5 * d2 / ell ** 2) + sn2 * torch.eye(X.shape[0])
    L = torch.linalg.cholesky(K)
    alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
    return (0.5 * (y @ alpha) + torch.sum(torch.log(torch.diag(L)))
            + 0.5 * len(y) * np.log(2 * np.pi))


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    X = rng.uniform(-2.0, 2.0, (POINTS, DIMS))
    y = np.sin(X).sum(axis=1) + 0.1 * rng.standard_normal(POINTS)
    theta = np.array([np.log(0.8), np.log(1.2), np.log(0.3)])
    return theta, X, y


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("gp-nll", VECTORISED, sys.modules[__name__], gp_nll, (0,), make_args,
                     gp_nll_hand, torch_port=gp_nll_torch,
                     size=f"{POINTS} points in {DIMS}-D, squared-exponential kernel")]
