"""Array subclasses made by code adgen runs as it is: an object's method, a library call, a
global object's attribute or item rebound after compiling (analyses.foreign_values).

Such a value with no derivative, only added to values that have one, reaches no pullback
that could refuse it: a masked array there gave 2 (k + v) at its masked element, where the
plain call's value does not depend on v (it keeps k's data), and ``S.todense()`` of a
scipy.sparse matrix (an np.matrix) ran through plain ndarrays' rules. Each is refused where
it is made (the forward checks it: runtime.plain_result), naming the line and the call;
plain values from the same code are differentiated, against central differences.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import adgen
from tests.gradcheck import check_grad

V = np.array([1.0, 1.0])
MASKED = np.ma.masked_array([1.0, 2.0], mask=[True, False])
S = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 4.0]]))


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


class Cfg:
    """A configuration object of a script: its method hands out an array it holds."""

    def __init__(self, m):
        self.M = m

    def make(self):
        return self.M


@dataclasses.dataclass
class Settings:
    offset: object

    def get(self):
        return self.offset


cfg = Cfg(MASKED)
plain_cfg = Cfg(np.array([1.0, 2.0]))
settings = Settings(MASKED)
plain_settings = Settings(np.array([1.0, 2.0]))
holder = Cfg(np.array([1.0, 2.0]))  # rebound to a masked array by a test, as a notebook would
TABLE = {"M": np.array([1.0, 2.0])}


def method_added(v):
    k = cfg.make()  # MARK method
    return np.sum(np.asarray(k + v) ** 2)


def method_inline_subtracted(v):
    return np.sum(np.asarray(cfg.make() - v) ** 2)  # MARK inline


def method_sliced_then_added(v):
    k = cfg.make()  # MARK sliced
    t = k[0:2]
    return np.sum(np.asarray(t + v) ** 2)


def dataclass_method(v):
    k = settings.get()  # MARK dataclass
    return np.sum(np.asarray(v + k) ** 2)


def todense_added(v):
    k = S.todense()  # MARK todense
    return np.sum(np.asarray(k + v) ** 2)


def sparse_sum_added(v):
    k = S.sum(axis=0)  # MARK sparse-sum
    return np.sum(np.asarray(k + v) ** 2)


def global_attribute(v):
    k = holder.M  # MARK attribute
    return np.sum(np.asarray(k + v) ** 2)


def global_item(v):
    k = TABLE["M"]  # MARK item
    return np.sum(np.asarray(k + v) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, mark, what", [
    (method_added, "method", "cfg.make()"),
    (method_inline_subtracted, "inline", "cfg.make()"),
    (method_sliced_then_added, "sliced", "cfg.make()"),
    (dataclass_method, "dataclass", "settings.get()"),
    (todense_added, "todense", "S.todense()"),
    (sparse_sum_added, "sparse-sum", "S.sum(axis=0)"),
])
def test_refused_where_the_method_returns_it(fun, mark, what, mutation):
    for _ in range(3):  # the generic call, then the signature's fast form
        with pytest.raises(adgen.NonDifferentiableError) as info:
            adgen.grad(fun, mutation=mutation)(V.copy())
        err = info.value
        assert (err.location.file, err.location.line) == (__file__, _line(f"# MARK {mark}"))
        assert f"{what} gave a numpy." in err.message and "subclass" in err.message
        assert "np.asarray" in err.hint
    with pytest.raises(adgen.NonDifferentiableError):
        adgen.vjp(fun, V.copy())


def test_a_lambda_is_refused_too():
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(lambda v: np.sum(np.asarray(cfg.make() + v) ** 2))(V.copy())
    assert "cfg.make() gave a numpy.ma.MaskedArray" in info.value.message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_attributes_and_items_of_globals_rebound_after_compiling(mutation):
    """A notebook cell rebinds a global object's array to a masked one after the gradient
    was compiled: the guards check the object, not its attributes, so the forward checks
    what it reads (it gave [2, 6] for [0, 6])."""
    for fun, mark, what in ((global_attribute, "attribute", "holder.M"),
                            (global_item, "item", "TABLE['M']")):
        g = adgen.grad(fun, mutation=mutation)
        np.testing.assert_allclose(g(V.copy()), 2 * (np.array([1.0, 2.0]) + V))
        check_grad(fun, (V,), mutation=mutation)
        before = holder.M
        holder.M = TABLE["M"] = MASKED
        try:
            with pytest.raises(adgen.NonDifferentiableError) as info:
                g(V.copy())
            assert info.value.location.line == _line(f"# MARK {mark}")
            assert f"{what} gave a numpy.ma.MaskedArray" in info.value.message
        finally:
            holder.M = TABLE["M"] = before
        np.testing.assert_allclose(g(V.copy()), 2 * (np.array([1.0, 2.0]) + V))


class Loader:
    """A data loader whose method hands out a dict of arrays (netCDF4-like: masked)."""

    def __init__(self, m):
        self.m = m

    def load(self):
        return {"M": self.m, "n": 2}


class Layer:
    def __init__(self, m):
        self.M = m

    def apply(self, x):
        return self.M + x


class Factory:
    def make(self):
        return Layer(loader.load()["M"])


loader = Loader(MASKED)
layer = Layer(MASKED)
factory = Factory()


def built_by_a_method(v):
    c = factory.make()  # MARK built
    return np.sum(np.asarray(c.apply(v)) ** 2)


def loaded_dict(v):
    data = loader.load()  # MARK loaded
    return np.sum(np.asarray(data["M"] + v) ** 2)


def global_layer(v):
    return np.sum(np.asarray(layer.apply(v)) ** 2)  # MARK layer


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_containers_and_objects_holding_one(mutation):
    """A dict a method hands out holding a masked array is refused where it is made; a
    global object whose method the function calls is refused when it is compiled (the
    method reads self.M: the gradient was [2, 6], where [0, 6] is right)."""
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(loaded_dict, mutation=mutation)(V.copy())
    assert info.value.location.line == _line("# MARK loaded")
    assert "loader.load()['M'] is a numpy.ma.MaskedArray" in info.value.message
    with pytest.raises(adgen.NonDifferentiableError) as info:
        adgen.grad(global_layer, mutation=mutation)(V.copy())
    assert info.value.location.line == _line("# MARK layer")
    assert "layer.M is a numpy.ma.MaskedArray" in info.value.message
    with pytest.raises(adgen.NonDifferentiableError) as info:  # it gave [2, 6]
        adgen.grad(built_by_a_method, mutation=mutation)(V.copy())
    assert info.value.location.line == _line("# MARK built")
    assert "factory.make().M is a numpy.ma.MaskedArray" in info.value.message
    plain_loader, plain_layer = Loader(MASKED.filled(0.0)), Layer(MASKED.filled(0.0))
    for fun in (lambda v: np.sum(np.asarray(plain_loader.load()["M"] + v) ** 2),
                lambda v: np.sum(np.asarray(plain_layer.apply(v)) ** 2)):
        check_grad(fun, (V,), mutation=mutation)


def plain_method(v):
    k = plain_cfg.make()
    return np.sum(np.asarray(k + v) ** 2)


def plain_dataclass(v):
    return np.sum((plain_settings.get() * v) ** 2)


def converted_sparse_sum(v):
    k = np.asarray(S.sum(axis=0)).ravel()
    return np.sum((k + v) ** 2)


def filled_masked(v):
    k = cfg.make().filled(0.0)
    return np.sum((k + v) ** 2)


def sparse_to_array(v):
    return np.sum((S.toarray() @ v) ** 2)


def methods_in_a_loop(v):
    s = 0.0
    for i in range(3):
        k = plain_cfg.make()
        s = s + np.sum((k * v) ** 2) * (i + 1)
    return s


def masked_beside_no_derivative(v):
    n = cfg.make().count()  # the masked array's own method, beside no value with a derivative
    return np.sum(v ** 2) * n


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun", [plain_method, plain_dataclass, converted_sparse_sum,
                                 filled_masked, sparse_to_array, methods_in_a_loop])
def test_plain_values_from_the_same_code_are_differentiated(fun, mutation):
    check_grad(fun, (V,), mutation=mutation)
    check_grad(fun, (np.array([0.3, -1.2]),), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_subclass_value_that_meets_no_derivative_is_left_alone(mutation):
    np.testing.assert_allclose(
        adgen.grad(masked_beside_no_derivative, mutation=mutation)(V.copy()), 2 * V * 1)
    check_grad(masked_beside_no_derivative, (V,), mutation=mutation)


def test_plain_code_has_no_check():
    """Methods of arrays, NumPy calls and arguments add nothing to the forward."""
    def loss(w, x):
        h = x.reshape(2, 2) @ w
        return np.sum(h.T ** 2) + w.sum()

    assert "plain_result" not in adgen.source(loss, np.ones(2), np.ones(4))
    assert "plain_result" in adgen.source(method_added, V)


def test_the_numba_backend_refuses_such_a_call_when_it_compiles():
    pytest.importorskip("numba")

    def local_maker(v):
        def make():
            return np.ones(2)
        k = make()  # MARK numba
        return np.sum((k + v) ** 2)

    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(local_maker, backend="numba")(V.copy())
    assert info.value.location.line == _line("# MARK numba")
    # the refusal names what the user wrote and what to do, not adgen's runtime helper
    # (it said "no nopython form of adgen's plain_result")
    message = info.value.message
    assert "numba" in message and "make()" in message and "plain_result" not in message
    assert "pass it as an argument" in info.value.hint and "backend='default'" in \
        info.value.hint
    check_grad(local_maker, (V,))
    np.testing.assert_allclose(adgen.grad(local_maker, backend="auto")(V.copy()), 2 * (1 + V))
