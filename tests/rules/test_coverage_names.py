"""Every public function numpy and jax.numpy both provide behaves as
``numpy_jax_names.txt`` classifies it.

- ``differentiated``: a rule or a reference is registered, and the registry's own test cases
  (which test_rules.py / test_references.py check by central differences) cover it;
- ``no-gradient`` / ``lowered``: the example, a loss of a float array ``x``, compiles and its
  gradient matches central differences (the function's output enters as a constant);
- ``refused``: a reason is registered, and the example raises an adgen error that says it.
"""

from __future__ import annotations

import linecache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
import adgen.rules
from adgen.errors import AdgenError
from adgen.rules import registry
from rules.cases import CASES
from rules.reference_cases import REFERENCE_CASES

DATA = Path(__file__).with_name("numpy_jax_names.txt")
CLASSES = ("differentiated", "no-gradient", "lowered", "refused")


def entries() -> list[tuple[str, str, str]]:
    out = []
    for line in DATA.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, cls, example = (part.strip() for part in line.split("|", 2))
        out.append((name, cls, example))
    return out


ENTRIES = entries()


def numpy_object(name: str) -> Any:
    obj: Any = np
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def loss_function(name: str, example: str) -> Any:
    """``def loss(x): <statements>; return <last>`` compiled from a file linecache knows."""
    *stmts, last = [s.strip() for s in example.split("; ")]
    body = "".join(f"    {s}\n" for s in stmts) + f"    return {last}\n"
    src = f"def loss(x):\n{body}"
    filename = f"<coverage example {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np}
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102
    return namespace["loss"]


def x_value() -> np.ndarray:
    return np.random.default_rng(13).uniform(0.1, 1.0, (3, 4))


def test_the_list_is_complete_and_classified() -> None:
    names = [n for n, _, _ in ENTRIES]
    assert len(names) == len(set(names)), "a name is listed twice"
    assert len(names) >= 370  # 343 of the top namespace and 31 of np.linalg (numpy 2.4)
    for name, cls, _ in ENTRIES:
        assert cls in CLASSES, f"{name}: unknown class {cls!r}"
        numpy_object(name)  # exists in the installed numpy


@pytest.mark.parametrize("name", [n for n, c, _ in ENTRIES if c == "differentiated"])
def test_differentiated(name: str) -> None:
    fn = numpy_object(name)
    rule = registry.lookup(fn)
    ref = registry.reference_of(fn)
    assert rule is not None or ref is not None, f"{name} has neither a rule nor a reference"
    if rule is not None:
        assert CASES.get(rule.name), f"{name}: its rule has no gradient-checked cases"
    else:
        assert REFERENCE_CASES.get(registry.all_references()[
            [r.impl for r in registry.all_references()].index(ref)].name), name


@pytest.mark.parametrize("name, example", [(n, e) for n, c, e in ENTRIES
                                           if c in ("no-gradient", "lowered")])
def test_passes_through(name: str, example: str) -> None:
    if not example:
        # no float input at all (files, print options): nothing reaches adgen
        assert registry.lookup(numpy_object(name)) is None
        return
    loss = loss_function(name, example)
    x = x_value()
    got = adgen.grad(loss)(x.copy())
    np.testing.assert_allclose(got, numerical_grad(loss, [x.copy()], 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, example", [(n, e) for n, c, e in ENTRIES if c == "refused"])
def test_refused(name: str, example: str) -> None:
    reason = registry.refusal_of(numpy_object(name))
    assert reason, f"{name} is classified refused but has no registered reason"
    if not example:
        return  # takes a Python callable: no float array reaches it directly
    loss = loss_function(name, example)
    with pytest.raises(AdgenError) as info:
        adgen.grad(loss)(x_value())
    # the registered reason, or (where a compiler pass refuses the call first) its name
    message = str(info.value)
    assert reason.split(";")[0] in message or f"np.{name}" in message, \
        f"{name}: the error says neither the reason nor the function: {message}"


def test_counts() -> None:
    """The share the issue asks for: at least 95% differentiated or classified (here: all),
    and every np.linalg name."""
    by_class: dict[str, int] = {}
    for _, cls, _ in ENTRIES:
        by_class[cls] = by_class.get(cls, 0) + 1
    assert sum(by_class.values()) == len(ENTRIES)
    assert by_class["differentiated"] >= 240
