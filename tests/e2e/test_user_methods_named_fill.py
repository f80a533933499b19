"""A method of the user's named ``fill`` is that method, not ``ndarray.fill``: ``self.fill(p)``
in a class that defines ``fill``, and ``sim.fill(p)`` on an object the function reads other
attributes of (``sim.u``) or hands to a function of the user's that does, were lowered as
``self[...] = p`` (a raw TypeError, "'Sim' object does not support item assignment"); with no
such sign, the error is an adgen error at the line saying what to write. An array's
``x.fill(v)`` is still the write."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

P = np.array([0.3, -0.7, 1.1])


class Field:
    def __init__(self):
        self.u = np.zeros(3)

    def fill(self, p):
        self.u = np.tanh(p) * 2.0

    def energy(self, p):
        self.fill(p)
        return np.sum(self.u ** 2)


def energy_of(field, p):
    field.fill(p)
    return np.sum(field.u ** 2)


def zeroed(x):
    y = x * x
    x.fill(0.5)
    return np.sum(y) + np.sum(x)


def expected(p):
    return 2.0 * (2.0 * np.tanh(p)) * 2.0 * (1.0 - np.tanh(p) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_self_fill_is_the_method(mutation):
    g = adgen.grad(Field().energy, mutation=mutation)(P.copy())
    np.testing.assert_allclose(g, expected(P))
    np.testing.assert_allclose(g, central(Field().energy, P.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_fill_of_an_object_argument_is_its_method(mutation):
    field = Field()
    g = adgen.grad(energy_of, argnums=1, mutation=mutation)(field, P.copy())
    np.testing.assert_allclose(g, expected(P))
    np.testing.assert_allclose(field.u, 2.0 * np.tanh(P))  # as a plain call leaves it


def test_an_arrays_fill_is_still_the_write():
    x = np.array([1.0, -2.0, 3.0])
    g = adgen.grad(zeroed)(x.copy())
    np.testing.assert_allclose(g, 2.0 * x)  # y = x * x read x before the fill
    assert [s.decision for s in adgen.explain(zeroed, file=None)] == ["guarded-save"]


def energy_alone(field, p):
    field.fill(p)  # nothing else of field is read here: taken for ndarray.fill
    return total(field)


def total(field):
    return np.sum(field.u ** 2)


def energy_through_the_class(field, p):
    Field.fill(field, p)  # the form the note of energy_alone's error suggests
    return total(field)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_fill_of_a_parameter_a_helper_reads_as_an_object(mutation):
    # total(field) reads field.u, which no ndarray has: field.fill(p) is Field.fill (session
    # 16; before, the store field[...] = p raised a TypeError with a note)
    g = adgen.grad(energy_alone, argnums=1, mutation=mutation)(Field(), P.copy())
    np.testing.assert_allclose(g, expected(P))
    np.testing.assert_allclose(
        g, central(lambda p: energy_alone(Field(), p), P.copy()), rtol=1e-6, atol=1e-8)


def energy_unseen(field, p):
    field.fill(p)  # nothing of field is read here, nor by a function adgen can see
    measure = total
    return measure(field)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_fill_taken_for_an_arrays_is_refused_naming_what_to_write(mutation):
    """An adgen error at the line, naming the call, why and the forms to write; it was a
    TypeError ("'Field' object does not support item assignment", with a note saying so)."""
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(energy_unseen, argnums=1, mutation=mutation)(Field(), P.copy())
    text = str(err.value)
    assert "field.fill(p)" in text and "Field.fill(field, p)" in text
    assert "field: Field" in text
    assert err.value.location.file.endswith("test_user_methods_named_fill.py")
    assert err.value.location.line == energy_unseen.__code__.co_firstlineno + 1


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_suggested_form(mutation):
    g = adgen.grad(energy_through_the_class, argnums=1, mutation=mutation)(Field(), P.copy())
    np.testing.assert_allclose(g, expected(P))
    np.testing.assert_allclose(
        g, central(lambda p: energy_through_the_class(Field(), p), P.copy()), rtol=1e-6,
        atol=1e-8)


def energy_annotated(field: Field, p):
    field.fill(p)  # the annotation says field is a Field: its own fill
    return total(field)


def energy_through_its_type(field, p):
    type(field).fill(field, p)
    return total(field)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [energy_annotated, energy_through_its_type],
                         ids=["annotated", "type_of"])
def test_an_annotated_parameter_and_type_of(f, mutation):
    # (energy_through_its_type was refused: "the in-place call .fill() with these arguments
    # is not supported (adgen knows fill(value))"; energy_annotated a bare TypeError)
    g = adgen.grad(f, argnums=1, mutation=mutation)(Field(), P.copy())
    np.testing.assert_allclose(g, expected(P))
    np.testing.assert_allclose(g, central(lambda p: f(Field(), p), P.copy()), rtol=1e-6,
                               atol=1e-8)
