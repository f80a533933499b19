"""A helper that writes its array argument in place, called with ``*args`` or ``**{...}``:
the arguments packed once and handed on (``args = (u, rhs); relax(*args)``), a keyword dict
made at the call (``relax(**{'u': u, 'rhs': rhs})``), a display unpacked (``relax(*(u, rhs))``),
and a helper forwarding its own ``*args`` to the writing one.

Through ``*``/``**`` the dispatch could not tell which argument the helper writes and refused
the call when it ran; a helper forwarding ``*args`` (``def run(u, *args): relax(u, *args)``)
gave a silently wrong gradient and jvp under both policies (it was taken to write nothing,
and its caller ran it as a plain call). adgen now spells out items known when it compiles
(transforms/star_arguments.py) and refuses the others at the call's line. Gradients against
central differences under both policies, jvp against a central difference.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen


def relax(u, rhs, omega=1.0):
    u[1:-1] += omega * (0.5 * (u[:-2] + u[2:]) - u[1:-1] + rhs[1:-1])


def packed_once(x):
    u = np.sin(x)
    rhs = x * x
    args = (u, rhs)
    for _ in range(2):
        relax(*args)
    return np.sum(u * x)


def keyword_dict_display(x):
    u = np.sin(x)
    relax(**{'u': u, 'rhs': np.cos(x), 'omega': 0.7})
    return np.sum(u ** 2)


def display_unpacked(x):
    u = x * 1.0
    relax(*(u, x), omega=0.5)
    relax(*[u, np.exp(x)])
    return np.sum(u * np.cos(x))


def forward_star(u, *args):
    relax(u, *args)


def forwarding(x):
    u = np.sin(x)
    forward_star(u, x, 0.5)
    return np.sum(u * x)


def forward_kwargs(u, rhs, **opts):
    relax(u, rhs, **opts)


def forwarding_kwargs(x):
    u = np.sin(x)
    forward_kwargs(u, x, omega=0.5)
    return np.sum(u * x)


def packed_in_a_list(x):
    u = np.sin(x)
    args = [u, x]
    relax(*args)
    return np.sum(u * x)


X = np.random.default_rng(3).uniform(0.2, 1.4, 6)
FOLLOWED = [packed_once, keyword_dict_display, display_unpacked]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FOLLOWED, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, mutation):
    given = X.copy()
    assert_grad_close(adgen.grad(f, mutation=mutation)(given), numerical_grad(f, (X,), 0),
                      rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(given, X)


@pytest.mark.parametrize("f", FOLLOWED, ids=lambda f: f.__name__)
def test_forward_mode(f):
    check_jvp(f, (X,), (np.linspace(-1.0, 1.0, 6),), atol=1e-7)


@pytest.mark.parametrize("mode", ["save", "strict", "jvp"])
@pytest.mark.parametrize("f, line, text", [
    (forwarding, forward_star.__code__.co_firstlineno + 1, "relax(u, *args)"),
    (packed_in_a_list, packed_in_a_list.__code__.co_firstlineno + 3, "relax(*args)"),
], ids=["forwarded_star_args", "list_held_by_a_name"])
def test_refused_at_the_users_call(f, line, text, mode):
    # forwarded: a silently wrong gradient and jvp before (the helper's write was unseen)
    with pytest.raises(adgen.UnsupportedError) as info:
        if mode == "jvp":
            adgen.jvp(f, (X.copy(),), (np.ones(6),))
        else:
            adgen.grad(f, mutation=mode)(X.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, line)
    assert text in str(err)
    assert "relax changes its arguments in place and is called with *args" in str(err)
    assert "pass the arguments one by one" in str(err)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_forwarded_keywords(mutation):
    # a **kwargs parameter was refused where the helper is defined; the helper is now compiled
    # for the keywords it is called with (transforms/keyword_shims.py): relax(u, rhs,
    # **opts) is the call relax(u, rhs, omega=omega), whose write of u is followed
    g = adgen.grad(forwarding_kwargs, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(forwarding_kwargs, (X.copy(),), 0))
    check_jvp(forwarding_kwargs, (X.copy(),), (np.linspace(-1.0, 1.0, 6),))