"""A list the function makes, read whole (np.array, np.stack, sum, np.mean, +) and grown in
place afterwards: the pullback must split the read's cotangent over the items the list held
at that line, not over the grown list (a plain IndexError from adgen's code, or a refusal
about "a position counted from its end", before session 23)."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp, numerical_grad


def stacked_then_grown(x0):
    hist = [x0 * 2]
    s = np.stack(hist)
    hist.append(x0 * 3)
    return np.sum(s ** 2) + np.sum(hist[1] ** 3)


def summed_then_grown(x0):
    hist = [x0 * 2]
    s = sum(hist)
    hist.append(x0 * 3)
    return np.sum(s ** 2) + np.sum(np.array(hist) ** 3)


def mean_then_grown(x0):
    hist = [x0 * 2]
    m = np.mean(hist, axis=0)
    hist.append(x0 * 3)
    return np.sum(m ** 2) + np.sum(hist[1] ** 3)


def joined_then_grown(x0):
    hist = [x0 * 2]
    t = hist + [x0]
    hist.append(x0 * 3)
    return np.sum(t[1] ** 2) + np.sum(t[0] ** 2) + np.sum(hist[1] ** 3)


def whole_history_every_step(x0):
    hist = []
    tot = 0.0
    for i in range(3):
        hist.append(x0 * (i + 1))
        tot = tot + np.sum(np.array(hist) ** 2)
    return tot


def extended_with_plus_equals(x0):
    hist = []
    tot = 0.0
    for i in range(3):
        hist += [x0 * (i + 1)]
        tot = tot + np.sum(np.array(hist) ** 2)
    return tot


def running_mean_in_a_while_loop(x0):
    hist = [x0]
    k = 0
    while k < 3:
        m = np.mean(hist, axis=0)
        hist.append(np.sin(m) * x0)
        k += 1
    return np.sum(np.stack(hist) ** 2)


def two_lists_made_in_one_line(x0):
    a, b = [], []
    for i in range(3):
        a.append(x0 * i)
        b.append(np.sum(a, axis=0) * 2)
    return np.sum(np.array(b) ** 2)


# a list that also loses items (hist.pop(0) is a new list: hist = hist[:0] + hist[1:]) was
# not taken for a local list, and a read before a later append raised a plain IndexError
# (np.stack) or was refused ('a list read by a position counted from its end': np.mean)
def popped_while_grown(x0):
    hist = []
    tot = 0.0
    for i in range(4):
        hist.append(np.sin(x0) * (i + 1))
        tot = tot + np.sum(np.stack(hist) ** 2 * np.arange(1.0, len(hist) + 1)[:, None])
        if i == 1:
            hist.pop(0)
    return tot


def window_of_the_last_three(x0):
    window = []
    tot = 0.0
    h = x0
    for i in range(6):
        h = np.sin(h) + 0.1 * i
        if len(window) == 3:
            window.pop(0)
        window.append(h)
        tot = tot + np.sum(np.mean(window, axis=0) * h)
    return tot


def window_kept_at_three(x0):
    hist = [x0, 2 * x0]
    tot = 0.0
    h = x0
    for _ in range(5):
        h = np.cos(h) * 1.3
        hist.append(h)
        tot = tot + np.sum(np.array(hist) * np.array([1.0, 2.0, 3.0])[:, None])
        hist.pop(0)
    return tot


PROGRAMS = [stacked_then_grown, summed_then_grown, mean_then_grown, joined_then_grown,
            whole_history_every_step, extended_with_plus_equals,
            running_mean_in_a_while_loop, two_lists_made_in_one_line, popped_while_grown,
            window_of_the_last_three, window_kept_at_three]
X0 = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("f", PROGRAMS)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad(f, mutation):
    # nothing a pullback reads is overwritten (a growth leaves the items read): strict too
    assert check_grad(f, (X0,), mutation=mutation) is not None


@pytest.mark.parametrize("f", PROGRAMS)
def test_jvp(f):
    check_jvp(f, (X0,), (np.array([0.3, -0.2, 0.5]),))


@pytest.mark.parametrize("f", [whole_history_every_step, running_mean_in_a_while_loop])
def test_hessian(f):
    h = adgen.hessian(f)(X0)
    want = np.array([numerical_grad(lambda y, i=i: adgen.grad(f)(y)[i], (X0,), 0)
                     for i in range(3)])
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)


def test_hand_formula():
    # sum_k sum_{i<=k} ((i+1) x0)^2 over k = 0..2: x0^2 (1 + (1 + 4) + (1 + 4 + 9)) = 20 x0^2
    np.testing.assert_allclose(adgen.grad(whole_history_every_step)(X0), 40 * X0, rtol=1e-12)


def stored_then_grown(x0):
    hist = [x0 * 2]
    d = {"h": hist}
    hist.append(x0 * 3)
    return np.sum(np.array(d["h"]) ** 2)  # Python reads both items through d


def test_a_stored_list_is_not_copied():
    # a store keeps the list itself: the value must stay Python's (two items), refused or right
    try:
        g = adgen.grad(stored_then_grown)(X0)
    except adgen.errors.UnsupportedError:
        return
    np.testing.assert_allclose(g, 26 * X0, rtol=1e-12)  # d/dx sum(4x^2 + 9x^2)


# lean (issue 15): where the list only grows, a loop keeps the snapshot's length, and the
# pullback takes the items again from the list as the function left it (snapshot_lengths)


def stacked_every_step(x0, W):
    h = x0
    hist = []
    s = 0.0
    for i in range(5):
        h = np.tanh(W @ h)
        hist.append(h)
        s = s + np.sum(np.stack(hist) ** 2) / (i + 1)
    return s


def item_rebound_while_grown(x0):
    # hist[0] is rebound after a read: the items a read saw are not the list's at the end
    hist = []
    tot = 0.0
    for i in range(4):
        hist.append(x0 * (i + 1))
        tot = tot + np.sum(np.array(hist) ** 3)
        hist[0] = hist[0] * 0.5
    return tot


def _tape_row(src):
    forward = src.split("_pullback")[0]
    return [line for line in forward.splitlines() if ".append((" in line]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_grown_list_read_every_step(mutation):
    W = np.array([[0.9, 0.2, 0.0], [-0.1, 0.8, 0.3], [0.05, 0.0, 1.1]])
    check_grad(stacked_every_step, (X0, W), argnums=(0, 1), mutation=mutation)
    check_grad(whole_history_every_step, (X0,), mutation=mutation)
    check_jvp(stacked_every_step, (X0, W), (np.array([0.3, -0.2, 0.5]), np.eye(3)))
    row = _tape_row(adgen.source(stacked_every_step, X0, W))
    assert len(row) == 1 and "len(t" in row[0], row  # the snapshot's length, not the list


@pytest.mark.parametrize("f", [item_rebound_while_grown])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_list_changed_otherwise_keeps_its_snapshots(f, mutation):
    try:
        check_grad(f, (X0,), mutation=mutation)
    except adgen.errors.UnsupportedError:
        return  # refused at the line: never wrong
    row = _tape_row(adgen.source(f, X0))
    assert not any("len(t" in r for r in row), row


def read_on_some_steps(x0):
    hist = []
    tot = 0.0
    for i in range(5):
        hist.append(np.cos(x0) * (i + 1))
        if i % 2 == 0:
            tot = tot + np.sum(np.array(hist) ** 2)
    return tot


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_grown_list_read_on_some_steps(mutation):
    check_grad(read_on_some_steps, (X0,), mutation=mutation)
