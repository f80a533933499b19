"""bindings.chain_value: the object a free name or attribute chain is bound to, read with
getattr (validate's context managers) or from stored attributes only, running no code
(array_subclasses' checks, which must not run a property of the user's)."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import parse_function


class Settings:
    def __init__(self) -> None:
        self.scale = 2.0
        self.reads = 0

    @property
    def doubled(self) -> float:
        self.reads += 1  # a side effect a check must not cause
        return 2.0 * self.scale


SETTINGS = Settings()
TABLE = np.arange(6.0).reshape(2, 3)


def reads_globals(x):
    y = x * SETTINGS.scale
    z = y + SETTINGS.doubled + np.linalg.norm(x) + TABLE.T[0, 0]
    return z + SETTINGS.missing + y


def _chains(fn):
    """Each Name and Attribute chain on a name the function loads, by its source text."""
    parsed = parse_function(fn)
    out = {}
    for n in gast.walk(parsed.tree):
        if isinstance(n, (gast.Name, gast.Attribute)) and isinstance(n.ctx, gast.Load):
            text = _text(n)
            if text is not None:
                out[text] = n
    return parsed, out


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    inner = _text(node.value) if isinstance(node.value, (gast.Name, gast.Attribute)) else None
    return None if inner is None else f"{inner}.{node.attr}"


@pytest.mark.parametrize("stored_only", [False, True])
def test_stored_attributes_and_modules_either_way(stored_only):
    parsed, chains = _chains(reads_globals)
    assert chain_value(parsed, chains["SETTINGS.scale"], stored_only=stored_only) == 2.0
    assert chain_value(parsed, chains["np.linalg.norm"], stored_only=stored_only) \
        is np.linalg.norm
    assert chain_value(parsed, chains["SETTINGS"], stored_only=stored_only) is SETTINGS
    # locals and parameters are not free names
    assert chain_value(parsed, chains["x"], stored_only=stored_only) is None
    assert chain_value(parsed, chains["y"], stored_only=stored_only) is None
    assert chain_value(parsed, chains["SETTINGS.missing"], stored_only=stored_only) is None


def test_stored_only_runs_no_property():
    parsed, chains = _chains(reads_globals)
    before = SETTINGS.reads
    assert chain_value(parsed, chains["SETTINGS.doubled"], stored_only=True) is None
    assert SETTINGS.reads == before
    assert chain_value(parsed, chains["SETTINGS.doubled"], stored_only=False) == 4.0
    assert SETTINGS.reads == before + 1


def test_stored_only_reads_nothing_of_an_array():
    parsed, chains = _chains(reads_globals)
    assert chain_value(parsed, chains["TABLE.T"], stored_only=True) is None
    np.testing.assert_array_equal(chain_value(parsed, chains["TABLE.T"], stored_only=False),
                                  TABLE.T)
