"""transforms/slot_changes.py: the forward notes the statements that may change a slot of a
list, dict or object (runtime.slots_changed), so a record of a container's slots
(runtime.items_at) is taken again only while none ran (issue 15)."""

from __future__ import annotations

import numpy as np

import adgen
from adgen import runtime
from adgen.item_shadows import SlotChanges


class Box:
    def __init__(self, v):
        self.v = v


def forward_of(f):
    text = adgen.source(f)
    return text[:text.index("_pullback(")]


def numbers_only(x):
    y = np.sin(x)
    z = 2.0 * y + x
    return np.sum(z)


def attribute_stored(b, x):
    b.v = x * 2.0
    return np.sum(b.v)


def appended(x):
    acc = []
    acc.append(x * 2.0)
    return np.sum(acc[0])


def item_stored(d, x):
    d["a"] = x * 2.0
    return np.sum(d["a"])


def test_arithmetic_and_numpy_calls_note_nothing():
    assert "slots_changed" not in forward_of(numbers_only)


def test_an_attribute_stored_is_noted():
    text = forward_of(attribute_stored)
    assert "b.v = " in text and "slots_changed()" in text.split("b.v = ", 1)[1].split("\n")[1]


def test_a_list_method_is_noted():
    text = forward_of(appended)
    after = text.split(".append(", 1)[1].split("\n")[1]
    assert "slots_changed()" in after


def test_an_item_stored_is_noted_unless_the_container_is_an_array():
    assert "slots_changed_by(d)" in forward_of(item_stored)
    before = SlotChanges.count
    runtime.slots_changed_by(np.zeros(2))
    runtime.slots_changed_by(1.5)
    assert SlotChanges.count == before
    runtime.slots_changed_by({"a": 1.0})
    runtime.slots_changed_by([1.0])
    assert SlotChanges.count == before + 2


def test_a_call_found_when_it_runs_is_noted_unless_compiled():
    before = SlotChanges.count
    runtime.slots_changed_by_call(("compiled", None))
    runtime.slots_changed_by_call(("compiled alone", None))
    assert SlotChanges.count == before
    runtime.slots_changed_by_call(("builtin", list.append, 1, False))
    runtime.slots_changed_by_call(("rrule", None, None, (), None, {}))
    assert SlotChanges.count == before + 2


def test_gradients_through_the_noted_statements():
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(adgen.grad(attribute_stored, argnums=1)(Box(0.0), x),
                               2.0 * np.ones(2))
    np.testing.assert_allclose(adgen.grad(appended)(x), 2.0 * np.ones(2))
    np.testing.assert_allclose(adgen.grad(item_stored, argnums=1)({}, x), 2.0 * np.ones(2))
    np.testing.assert_allclose(adgen.grad(numbers_only)(x), 2.0 * np.cos(x) + 1.0)
