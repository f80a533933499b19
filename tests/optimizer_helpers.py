"""Optimizer steps written the way users write them, in a module of their own: imported by
tests/e2e/test_containers_given_to_helpers.py (a helper from another module, called by name
and as a module attribute)."""

from __future__ import annotations


def momentum_step(params, grads, state, lr):
    for k in params:
        state[k] = 0.9 * state[k] + 0.1 * grads[k]
        params[k] -= lr * state[k]
