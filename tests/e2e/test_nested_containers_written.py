"""A list or dict held by another container, changed in place with a value that has a
derivative, as people keep a history or a cache (``hist = {"h": []}; hist["h"].append(h)``,
``cache["layer"]["z"] = x @ W``, ``L[1].append(v)``, ``L[0][1] = v``).

It was a silently zero gradient: the activity analysis follows a container by its name, so
the write into the inner container never made the outer one carry a derivative, and the
pullback skipped it. Such writes were refused (afdf7a9); a part written through the name it
was just read into (``hist["h"].append(h)``, ``cache["layer"]["z"] = v``, ``L[1].append(v)``,
``e = d["inner"]; e["w"] = v``) is followed now (analyses.parameter_parts.local_parts: the
derivative flows from the part to its holder, and the write's adjoint starts from the
holder's), checked against central differences under both policies, in loops, a method and a
lambda. Still refused at the user's line: the inner list also held by a name of its own or
the holder copied (another name the adjoint does not follow), and a list of numbers in a
list written by index. ``extend`` of a part is followed since it is read again before each
append (transforms/list_end_reads)."""

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


def inner_list_named(x):
    inner = []
    hist = {"h": inner}
    hist["h"].append(np.tanh(x[:3]))
    return np.sum(inner[-1] ** 2)


def holder_copied(x):
    hist = {"h": []}
    other = hist
    hist["h"].append(np.tanh(x[:3]))
    return np.sum(other["h"][-1] ** 2)


def history_read_in_the_loop(x):
    # hist["h"][-1] read before the append of the same step: it was refused when the
    # gradient ran (its adjoint was built at the list's final length, -1 the last item);
    # list_end_reads reads the same item from the start
    hist = {"h": [x[3:] * 1.0]}
    h = x[:3]
    total = 0.0
    for _ in range(3):
        h = np.sin(h) * hist["h"][-1]
        hist["h"].append(h)
        total = total + np.sum(hist["h"][-1] * hist["h"][0])
    return total


def layers_cached_by_a_variable_key(x):
    cache = {"l0": {}, "l1": {}}
    h = x[:3]
    for name in ["l0", "l1"]:
        z = h @ W
        cache[name]["z"] = z
        h = np.concatenate([np.tanh(z), h[:1]])
    return np.sum(cache["l0"]["z"] * cache["l1"]["z"]) + np.sum(h)


REFUSED = [numbers_in_a_list_in_a_list, inner_list_named, holder_copied,
           layers_cached_by_a_variable_key]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_extend_of_a_part(mutation):
    # refused until list_end_reads read the part again before lower_mutation's appends
    assert check_grad(extended, (X.copy(),), mutation=mutation) is not None


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_history_read_from_its_end_in_the_loop(mutation):
    assert check_grad(history_read_in_the_loop, (X.copy(),), mutation=mutation) is not None


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", REFUSED, ids=[f.__name__ for f in REFUSED])
def test_refused_at_the_users_line(f, mutation):
    with pytest.raises(adgen.UnsupportedError,
                       match="reaches the same list, dict or object|an item of|a part of|counted from its end") as err:
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


def history_by_position(x):
    hist = {"h": [x[3:] * 1.0]}
    h = x[:3]
    total = 0.0
    for k in range(3):
        h = np.sin(h) * hist["h"][k]
        hist["h"].append(h)
        total = total + np.sum(hist["h"][k + 1] * hist["h"][0])
    return total


def layers_cached(x):
    cache = {"l0": {}, "l1": {}}
    z = x[:3] @ W
    cache["l0"]["z"] = z
    cache["l1"]["z"] = np.tanh(z) @ W.T
    return np.sum(cache["l0"]["z"] ** 2) + np.sum(cache["l1"]["z"] * x[3:])


class Net:
    def loss(self, x):
        hist = {"acts": [], "norms": []}
        h = x[:3]
        for _ in range(2):
            h = np.tanh(h @ W @ W.T)
            hist["acts"].append(h)
            hist["norms"].append(np.sum(h ** 2))
        return hist["norms"][0] * hist["norms"][1] + np.sum(hist["acts"][0])


FINE = [constants_written, nested_read, array_in_a_list_written, history, cache,
        lists_in_a_list, through_another_name, layers_cached, history_by_position,
        Net().loss, lambda x: history(x * 1.0)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FINE, ids=[f.__name__ for f in FINE[:-1]] + ["lambda"])
def test_look_alikes_still_work(f, mutation):
    check_grad(f, (X,), mutation=mutation)


# forward mode writes into the holder's tangent as the primal does: the forms reverse mode
# refuses (but extend, refused in forward mode too) are right there
FORWARD = [history, cache, lists_in_a_list, through_another_name, Net().loss,
           numbers_in_a_list_in_a_list, inner_list_named, holder_copied,
           history_read_in_the_loop, layers_cached_by_a_variable_key]


@pytest.mark.parametrize("f", FORWARD, ids=[f.__name__ for f in FORWARD])
def test_forward_mode(f):
    # the tangent code's activity follows the part to its holder too: jvp was a silently
    # zero tangent here, even while reverse mode refused
    d = np.linspace(-1.0, 1.0, X.size)
    eps = 1e-6
    _, tangent = adgen.jvp(f, (X.copy(),), (d,))
    assert tangent == pytest.approx((f(X + eps * d) - f(X - eps * d)) / (2 * eps), rel=1e-6)


def test_hessian_of_a_history():
    eps = 1e-5
    H = adgen.hessian(history)(X.copy())
    for i in range(X.size):
        e = np.zeros(X.size)
        e[i] = eps
        column = (adgen.grad(history)(X + e) - adgen.grad(history)(X - e)) / (2 * eps)
        np.testing.assert_allclose(H[:, i], column, rtol=1e-5, atol=1e-7)


# --- the items of a for loop's sequence: the loop's own lowering follows them --------------


def appended_to_each(x, lists):
    # each list of lists grows by one item, read through the loop's name only
    total = 0.0
    for acts in lists:
        acts.append(x * 2.0)
        total = total + np.sum(acts[-1] ** 2)
    return total


def appended_and_read_through_the_sequence(x, lists):
    for acts in lists:
        acts.append(x * 2.0)
    return sum(np.sum(v * v) for acts in lists for v in acts)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_items_of_a_loops_sequence(mutation):
    f = appended_to_each
    g = adgen.grad(f, mutation=mutation)(X.copy(), [[], [np.ones(6)]])
    h = 1e-6
    fd = np.array([(f(X + h * e, [[], [np.ones(6)]]) - f(X - h * e, [[], [np.ones(6)]]))
                   / (2 * h) for e in np.eye(X.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    # read again through the sequence after the write: refused, in the user's names
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(appended_and_read_through_the_sequence, mutation=mutation)(
            X.copy(), [[], [np.ones(6)]])
    assert "lists" in str(err.value) and "seq" not in str(err.value)
    assert err.value.location is not None
