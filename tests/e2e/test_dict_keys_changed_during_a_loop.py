"""A loop over a dict whose keys a function it calls changes, but not its size (a helper
renaming a key of a global table: ``TABLE.pop(k); TABLE[k + "2"] = v``). Python walks the
dict as it is (the new key, or RuntimeError: dictionary keys changed during iteration);
adgen's loop walks the keys it had when the loop started (``for k, v in TABLE.items()``
walked the old items: a silently wrong value and gradient before session 21). The loop's
check (adgen.walked_lengths) now refuses it at the loop's line, in every mode; a loop whose
helper writes the item it walks, or leaves the keys as they were, runs.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError

TABLE = {}
X = np.array([0.3, -0.7, 1.2])


def rename(k):
    v = TABLE.pop(k)
    TABLE[k + "2"] = v


def reweight(k):
    TABLE[k] = TABLE[k] * 2.0


def fill():
    TABLE.clear()
    TABLE.update(a=1.0, b=2.0)


def renames_ahead(x):
    fill()
    s = 0.0
    for k, w in TABLE.items():
        s = s + w * np.sum(x ** 2)
        if k == "a":
            rename("b")
    return s


def renames_behind(x):
    fill()
    s = 0.0
    for k in TABLE:
        s = s + TABLE[k] * np.sum(np.sin(x))
        rename(k)
    return s


def reweights_the_walked_key(x):
    fill()
    s = 0.0
    for k in TABLE:
        reweight(k)
        s = s + TABLE[k] * np.sum(np.sin(x))
    return s


def entry_points():
    return {"grad save": lambda f: adgen.grad(f, mutation="save")(X),
            "grad strict": lambda f: adgen.grad(f, mutation="strict")(X),
            "jvp": lambda f: adgen.jvp(f, (X,), (X,)),
            "hessian": lambda f: adgen.hessian(f)(X)}


@pytest.mark.parametrize("mode", list(entry_points()))
@pytest.mark.parametrize("f", [renames_ahead, renames_behind])
def test_refused_at_the_loop(f, mode):
    with pytest.raises(UnsupportedError, match="keys of the dict this for loop walks "
                                               "changed") as info:
        entry_points()[mode](f)
    err = info.value
    assert err.location.file == __file__
    assert err.location.source_line.strip().startswith("for k")
    assert "list(d)" in str(err)


def test_python_walks_other_keys():
    # what adgen refuses: Python's own walk of the same code
    assert renames_ahead(X) == pytest.approx(3.0 * np.sum(X ** 2))  # a, then b2 (2.0)
    with pytest.raises(RuntimeError, match="keys changed"):
        renames_behind(X)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_helper_writing_the_walked_key_runs(policy):
    expected = numerical_grad(reweights_the_walked_key, (X,), 0)
    np.testing.assert_allclose(adgen.grad(reweights_the_walked_key, mutation=policy)(X),
                               expected, rtol=1e-6, atol=1e-8)
    _, tangent = adgen.jvp(reweights_the_walked_key, (X,), (X,))
    assert tangent == pytest.approx(float(expected @ X), rel=1e-6)
