"""A list or dict held by another container, changed in place with a value that has a
derivative, as people keep a history or a cache (``hist = {"h": []}; hist["h"].append(h)``,
``cache["layer"]["z"] = x @ W``, ``L[1].append(v)``, ``L[0][1] = v``).

It was a silently zero gradient: the activity analysis follows a container by its name, so
the write into the inner container never made the outer one carry a derivative, and the
pullback skipped it. adgen follows such writes through aliases nowhere yet; they are refused
now at the user's line (reverse_stores.refuse_varied_into_alias), under both policies. Writes
of values without a derivative, reads of nested containers and arrays held by a list written
in place still work, checked against central differences."""

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])
W = np.array([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]])


def history(x):
    hist = {"h": []}
    h = x[:3]
    for _ in range(2):
        h = np.tanh(h * 1.5)
        hist["h"].append(h)
    return np.sum(hist["h"][-1]) + np.sum(hist["h"][0] ** 2)


def cache(x):
    c = {}
    c["layer"] = {}
    c["layer"]["z"] = x[:3] @ W
    return np.sum(np.sin(c["layer"]["z"]))


def lists_in_a_list(x):
    L = [[], []]
    L[0].append(x[:3] * 2.0)
    L[1].append(x[3:] ** 2)
    return np.sum(L[0][0] * L[1][0])


def through_another_name(x):
    d = {"inner": {}}
    e = d["inner"]
    e["w"] = x[:3] * 2.0
    return np.sum(d["inner"]["w"] ** 2)


def extended(x):
    d = {"a": []}
    d["a"].extend([x[:3] * 2.0, x[3:] * 1.0])
    return np.sum(d["a"][0] * d["a"][1])


def numbers_in_a_list_in_a_list(x):
    L = [[0.0, 0.0]]
    L[0][1] = x[0] * 3.0
    return L[0][1] * x[1]


REFUSED = [history, cache, lists_in_a_list, through_another_name, extended,
           numbers_in_a_list_in_a_list]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", REFUSED, ids=[f.__name__ for f in REFUSED])
def test_refused_at_the_users_line(f, mutation):
    with pytest.raises(adgen.UnsupportedError,
                       match="reaches the same list, dict or object|an item of") as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "test_nested_containers_written.py" in str(err.value)


def constants_written(x):
    d = {"a": []}
    d["a"].append(3.0)  # no derivative: nothing to follow
    return np.sum(x * d["a"][0])


def nested_read(x):
    p = {"l1": {"W": W}, "scale": [2.0]}
    return np.sum(np.tanh(x[:3] @ p["l1"]["W"])) * p["scale"][0]


def array_in_a_list_written(x):
    bufs = [np.zeros(3)]
    bufs[0][1] = x[0] * 3.0
    bufs[0][2:] = x[4:5] ** 2
    return np.sum(bufs[0] * x[:3])


FINE = [constants_written, nested_read, array_in_a_list_written]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FINE, ids=[f.__name__ for f in FINE])
def test_look_alikes_still_work(f, mutation):
    check_grad(f, (X,), mutation=mutation)
