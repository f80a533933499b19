"""A loss that starts threads to compute its parts (``threading.Thread(target=worker,
args=(x, out, i))``): the work a thread does is not followed, so the construction is refused
at the user's line in grad and jvp, with what to write instead. grad refused it inside
threading's own ``__init__`` (``del exc``), jvp called Thread "your class" and suggested
building it outside. The rewrite the message gives (call the worker directly) is
differentiated, vs central differences.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import check_grad, check_jvp


def worker(x, out, i):
    out[i] = np.sum(x ** (i + 1))


def threaded(x):
    out = np.zeros(2)
    ts = [threading.Thread(target=worker, args=(x, out, i)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return np.sum(out * np.array([1.0, 3.0]))


def direct(x):
    out = np.zeros(2)
    for i in range(2):
        worker(x, out, i)
    return np.sum(out * np.array([1.0, 3.0]))


X = np.array([0.3, -0.7, 1.1])
LINE = threaded.__code__.co_firstlineno + 2


@pytest.mark.parametrize("run", [lambda: adgen.grad(threaded)(X.copy()),
                                 lambda: adgen.grad(threaded, mutation="strict")(X.copy()),
                                 lambda: adgen.jvp(threaded, (X.copy(),), (np.ones(3),))],
                         ids=["grad", "grad-strict", "jvp"])
def test_a_thread_is_refused_at_the_users_line(run):
    with pytest.raises(AdgenError) as info:
        run()
    message = str(info.value)
    assert f"test_threads_started_inside.py:{LINE}:" in message
    assert "thread started inside the differentiated function" in message
    assert "worker(x, out, i)" in message
    assert "your class" not in message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_worker_called_directly_is_differentiated(mutation):
    check_grad(direct, [X.copy()], mutation=mutation)
    check_jvp(direct, [X.copy()], [np.array([1.0, -0.5, 0.25])])
