"""Central differences and comparisons for gradients of list and dict arguments (shared by
tests/mutation/test_list_arguments.py and tests/fuzz/test_fuzz_containers.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

EPS = 1e-6


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """(path, leaf) for every float array and float of a nested list/dict."""
    if isinstance(value, list):
        return [x for k, v in enumerate(value) for x in leaves(v, path + (k,))]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in leaves(v, path + (k,))]
    if isinstance(value, (float, np.ndarray)):
        return [(path, value)]
    return []


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        value = value[k]
    return value


def _set(value: Any, path: tuple[Any, ...], leaf: Any) -> None:
    _at(value, path[:-1])[path[-1]] = leaf


def widened(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    if isinstance(value, list):
        return [widened(v) for v in value]
    if isinstance(value, dict):
        return {k: widened(v) for k, v in value.items()}
    return value


def fd_container(f: Callable[[Any], Any], arg: Any) -> Any:
    """Central differences of scalar ``f`` with respect to every float leaf of ``arg`` (in
    float64), as a value of ``arg``'s structure."""
    base = widened(arg)
    grad = copy.deepcopy(base)
    for path, leaf in leaves(base):
        if isinstance(leaf, np.ndarray):
            g = np.zeros(leaf.shape)
            for index in np.ndindex(leaf.shape):
                vals = []
                for d in (EPS, -EPS):
                    a = copy.deepcopy(base)
                    _at(a, path)[index] += d
                    vals.append(float(f(a)))
                g[index] = (vals[0] - vals[1]) / (2 * EPS)
        else:
            vals = []
            for d in (EPS, -EPS):
                a = copy.deepcopy(base)
                _set(a, path, leaf + d)
                vals.append(float(f(a)))
            g = (vals[0] - vals[1]) / (2 * EPS)
        _set(grad, path, g)
    return grad


def assert_grad_close(actual: Any, expected: Any, rtol: float, what: str = "gradient") -> None:
    """Same structure (list/dict, lengths, keys, array shapes), values within tolerance."""
    if isinstance(expected, list):
        assert type(actual) is list and len(actual) == len(expected), f"{what}: {actual!r}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            assert_grad_close(a, e, rtol, f"{what}[{k}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), f"{what}: {actual!r}"
        for k in expected:
            assert_grad_close(actual[k], expected[k], rtol, f"{what}[{k!r}]")
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray) and actual.shape == expected.shape, (
            f"{what}: {actual!r}")
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol, err_msg=what)
    else:
        assert np.ndim(actual) == 0, f"{what}: {actual!r}"
        np.testing.assert_allclose(float(actual), expected, rtol=rtol, atol=rtol, err_msg=what)
