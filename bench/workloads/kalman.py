"""Log-likelihood of a linear-Gaussian state-space model by a Kalman filter: 4 states, 2
observations, 50 steps. Gradient wrt the transition matrix ``A`` and the observations.

Small matrices in a time loop (predict, innovate, update), written out of place as in a
textbook; ``np.linalg.solve``, ``inv`` and ``det`` in every step. The hand adjoint keeps the
time loop (each step depends on the last) and reads a per-step tape of the filter's state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

STATES, OBS, STEPS = 4, 2, 50


def kalman(A, ys, H, Q, R):
    m = np.zeros(A.shape[0])
    P = np.eye(A.shape[0])
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + Q
        v = ys[t] - H @ m
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        ll = ll - 0.5 * (v @ np.linalg.solve(S, v) + np.log(np.linalg.det(S)))
        m = m + K @ v
        P = P - K @ S @ K.T
    return ll


def kalman_hand(A, ys, H, Q, R):
    """Reverse mode by hand: the forward pass records m, P, the prediction and S^-1 per step."""
    T = ys.shape[0]
    m = np.zeros(A.shape[0])
    P = np.eye(A.shape[0])
    tape = []
    ll = 0.0
    for t in range(T):
        mp = A @ m
        Pp = A @ P @ A.T + Q
        v = ys[t] - H @ mp
        S = H @ Pp @ H.T + R
        S_inv = np.linalg.inv(S)
        K = Pp @ H.T @ S_inv
        ll -= 0.5 * (v @ S_inv @ v + np.log(np.linalg.det(S)))
        tape.append((m, P, Pp, v, S, S_inv, K))
        m = mp + K @ v
        P = Pp - K @ S @ K.T
    A_bar = np.zeros_like(A)
    ys_bar = np.zeros_like(ys)
    m_bar = np.zeros_like(m)
    P_bar = np.zeros_like(P)
    for t in reversed(range(T)):
        m, P, Pp, v, S, S_inv, K = tape[t]
        # ll -= (v S^-1 v + log det S) / 2
        a = S_inv @ v
        v_bar = -a
        S_bar = 0.5 * (np.outer(a, a) - S_inv.T)
        # m' = mp + K v ; P' = Pp - K S K^T
        mp_bar = m_bar.copy()
        K_bar = np.outer(m_bar, v)
        v_bar += K.T @ m_bar
        Pp_bar = P_bar.copy()
        K_bar -= P_bar @ K @ S.T + P_bar.T @ K @ S
        S_bar -= K.T @ P_bar @ K
        # K = Pp H^T S^-1
        Pp_bar += K_bar @ S_inv.T @ H
        S_inv_bar = H @ Pp.T @ K_bar
        S_bar -= S_inv.T @ S_inv_bar @ S_inv.T
        # S = H Pp H^T + R ; v = y - H mp
        Pp_bar += H.T @ S_bar @ H
        ys_bar[t] = v_bar
        mp_bar -= H.T @ v_bar
        # Pp = A P A^T + Q ; mp = A m
        A_bar += Pp_bar @ A @ P.T + Pp_bar.T @ A @ P + np.outer(mp_bar, m)
        P_bar = A.T @ Pp_bar @ A
        m_bar = A.T @ mp_bar
    return A_bar, ys_bar


def kalman_torch(A, ys, H, Q, R):
    m = torch.zeros(A.shape[0])
    P = torch.eye(A.shape[0])
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + Q
        v = ys[t] - H @ m
        S = H @ P @ H.T + R
        K = P @ H.T @ torch.linalg.inv(S)
        ll = ll - 0.5 * (v @ torch.linalg.solve(S, v) + torch.log(torch.linalg.det(S)))
        m = m + K @ v
        P = P - K @ S @ K.T
    return ll


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    angle = 0.3
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    A = 0.95 * np.kron(np.eye(2), rot) + 0.02 * rng.standard_normal((STATES, STATES))
    H = rng.standard_normal((OBS, STATES))
    Q = 0.1 * np.eye(STATES)
    R = 0.2 * np.eye(OBS)
    x = rng.standard_normal(STATES)
    ys = np.empty((STEPS, OBS))
    for t in range(STEPS):
        x = A @ x + np.sqrt(0.1) * rng.standard_normal(STATES)
        ys[t] = H @ x + np.sqrt(0.2) * rng.standard_normal(OBS)
    return A, ys, H, Q, R


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("kalman", LOOP, sys.modules[__name__], kalman, (0, 1), make_args,
                     kalman_hand, hand_loop=kalman_hand, torch_port=kalman_torch,
                     size=f"{STATES} states, {OBS} observations, {STEPS} steps",
                     loop_iters=STEPS)]
