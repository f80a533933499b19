"""The first gradient of a plain function does not import the passes for constructs it does not
have (issue 15, cold start): function_aliases (``s = np.sin`` bound in the body),
inlined_closures (a def or lambda bound in the body), item_builtins (``map``, ``filter``,
``max``/``min``, ``dict``, ``list``, ``zip`` named by its code), star_arguments (a ``*`` or
``**`` argument) and called_back (a call of ``sorted``, ``xs.sort``, ``functools.reduce``, ...
whose callback may write in place), untracked_views (an ``x.mT`` or a call of two
arguments, as a one-operand ``np.einsum`` is), method_values (an attribute of a name the
function assigns, read without a call) and property_setters (a store into an attribute of a
name). Each is imported by the first function that has its
construct, which gets the right gradient (or refusal) under both policies in the same fresh
process; and
the property rewrite does not look through the module's classes for a function reading no
attribute of a value it binds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from adgen.transforms import properties
from gradcheck import numerical_grad

import adgen

USER_FILE = '''import numpy as np


def smooth(x):
    y = np.sin(x) * x
    z = np.exp(-y)
    return np.sum(z / (1.0 + x ** 2))


def aliased(x):
    s = np.sin
    return np.sum(s(x) * x)


def with_closure(x):
    def double(buf):
        buf *= 2.0

    y = x ** 2
    double(y)
    return np.sum(y * x)


def mapped(x):
    return sum(map(lambda t: t ** 3, x))


def fill_squares(out, x):
    out[:] = x ** 2


def starred(x):
    buf = np.empty_like(x)
    args = (buf, x)
    fill_squares(*args)
    return np.sum(buf * x)


def ranked(x):
    ys = sorted([x[0], 2.0 * x[1], x[2]], key=abs)
    return ys[0] * ys[2] + ys[1]


class Circle:
    def __init__(self, r):
        self.r = r

    @property
    def area(self):
        return np.pi * self.r ** 2


def area_of(c, x):
    return np.sum(c.area * x)


def areas(x):
    c = Circle(x)
    return np.sum(c.area)


def einsum_diag(x):
    B = np.outer(x, x)
    d = np.einsum("ii->i", B)
    d *= 2.0
    return np.sum(B)


class M:
    def __init__(self, a):
        self.s = a

    def f(self, x):
        return np.sin(self.s * x)


def taken_then_changed(x):
    m = M(x)
    g = m.f
    m.s = x * 2.0
    return np.sum(g(x))


class Scaled:
    def __init__(self):
        self._s = 1.0

    @property
    def scale(self):
        return self._s

    @scale.setter
    def scale(self, v):
        self._s = 2.0 * v


def set_scale(x):
    m = Scaled()
    m.scale = x
    return np.sum(m.scale * x)
'''

SCRIPT = '''import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adgen
import user_code as u

LAZY = ("adgen.transforms.function_aliases", "adgen.transforms.inlined_closures",
        "adgen.transforms.item_builtins", "adgen.transforms.star_arguments",
        "adgen.transforms.called_back", "adgen.transforms.untracked_views",
        "adgen.transforms.method_values", "adgen.transforms.property_setters")


def loaded():
    return [m for m in LAZY if m in sys.modules]


x = np.linspace(0.1, 1.0, 5)
out = {"smooth": adgen.grad(u.smooth)(x).tolist(), "after smooth": loaded()}
for name in ("aliased", "with_closure", "mapped", "starred", "ranked"):
    f = getattr(u, name)
    out[name] = {p: adgen.grad(f, mutation=p)(x).tolist() for p in ("save", "strict")}
    out["after " + name] = loaded()
for name in ("einsum_diag", "taken_then_changed"):
    out[name] = {}
    for p in ("save", "strict"):
        try:
            adgen.grad(getattr(u, name), mutation=p)(x)
            out[name][p] = "no error"
        except adgen.errors.AdgenError as e:
            out[name][p] = str(e)
    out["after " + name] = loaded()
out["set_scale"] = {p: adgen.grad(u.set_scale, mutation=p)(x).tolist() for p in ("save", "strict")}
out["after set_scale"] = loaded()
print(json.dumps(out))
'''

# the module each function's construct needs, in the order the script differentiates them
NEEDS = {"aliased": "function_aliases", "with_closure": "inlined_closures",
         "mapped": "item_builtins", "starred": "star_arguments", "ranked": "called_back"}


def _user_code(tmp_path: Path) -> object:
    """The user's module, imported here from ``tmp_path`` (and left out of sys.modules: other
    tests import a user_code of their own)."""
    (tmp_path / "user_code.py").write_text(USER_FILE)
    sys.path.insert(0, str(tmp_path))
    held = sys.modules.pop("user_code", None)
    try:
        import importlib

        return importlib.import_module("user_code")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("user_code", None)
        if held is not None:
            sys.modules["user_code"] = held


def test_syntax_modules_wait_for_their_construct(tmp_path: Path) -> None:
    user = _user_code(tmp_path)
    (tmp_path / "run.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    x = np.linspace(0.1, 1.0, 5)
    # the plain function's first gradient imports none of them
    np.testing.assert_allclose(out["smooth"], numerical_grad(user.smooth, (x,), 0),
                               rtol=1e-6, atol=1e-9)
    assert out["after smooth"] == []
    hand = {"aliased": np.sin(x) + x * np.cos(x),  # sin(x) x
            "with_closure": 6 * x ** 2,  # 2 x ** 3: the closure doubles y in place
            "mapped": 3 * x ** 2,
            "starred": 3 * x ** 2,  # fill_squares(buf, x) through *args: x ** 3
            # sorted by abs: x0, 2 x1 > x2 here, so x0 * 2 x1 + x2
            "ranked": np.array([2 * x[1], 2 * x[0], 1.0, 0.0, 0.0])}
    loaded: list[str] = []
    for name, module in NEEDS.items():
        f = getattr(user, name)
        for policy in ("save", "strict"):
            np.testing.assert_allclose(out[name][policy], hand[name], rtol=1e-12)
            np.testing.assert_allclose(out[name][policy], numerical_grad(f, (x,), 0),
                                       rtol=1e-6, atol=1e-9)
        # imported at the first function with the construct, not before
        assert f"adgen.transforms.{module}" not in loaded
        loaded.append(f"adgen.transforms.{module}")
        assert out[f"after {name}"] == loaded
    # refused at the user's line as before: a write through a one-operand einsum's view
    # (untracked_views), a store into m after its method was taken as a value (method_values)
    # (m.s = ... stores into an attribute: property_setters is imported there too)
    for name, modules, line, words in (
            ("einsum_diag", ["untracked_views"], 65, "holds a view adgen does not follow"),
            ("taken_then_changed", ["method_values", "property_setters"], 80,
             "after its method m.f was taken")):
        for policy in ("save", "strict"):
            assert f"user_code.py:{line}:" in out[name][policy], out[name][policy]
            assert words in out[name][policy]
        for module in modules:
            assert f"adgen.transforms.{module}" not in loaded
            loaded.append(f"adgen.transforms.{module}")
        assert out[f"after {name}"] == loaded
    # m.scale = x through a property's setter (property_setters): 2 x, times x
    for policy in ("save", "strict"):
        np.testing.assert_allclose(out["set_scale"][policy], 4 * x, rtol=1e-12)
        np.testing.assert_allclose(out["set_scale"][policy],
                                   numerical_grad(user.set_scale, (x,), 0), rtol=1e-6)
    assert out["after set_scale"] == loaded


def test_properties_are_looked_up_only_for_attributes_of_values(tmp_path: Path,
                                                                 monkeypatch) -> None:
    user = _user_code(tmp_path)
    scans: list[int] = []
    real = properties._user_property_names

    def counted(namespace):  # noqa: ANN001, ANN202
        scans.append(1)
        return real(namespace)

    monkeypatch.setattr(properties, "_user_property_names", counted)
    x = np.linspace(0.1, 1.0, 5)
    # np.sin, np.exp, np.sum: attributes of a module only, no class of the module looked at
    np.testing.assert_allclose(adgen.grad(user.smooth)(x),
                               numerical_grad(user.smooth, (x,), 0), rtol=1e-6, atol=1e-9)
    assert scans == []
    # c.area of a parameter: the property's getter is called, and differentiated
    c = user.Circle(x)
    for policy in ("save", "strict"):
        g = adgen.grad(user.area_of, argnums=1, mutation=policy)(c, x)
        np.testing.assert_allclose(g, np.pi * x ** 2, rtol=1e-12)
    assert scans
    # Circle(x).area of an object built here: d/dx of pi x ** 2 summed
    for policy in ("save", "strict"):
        np.testing.assert_allclose(adgen.grad(user.areas, mutation=policy)(x),
                                   2 * np.pi * x, rtol=1e-12)


def test_the_gates_name_what_the_passes_rewrite() -> None:
    """The names the compiler looks for before importing item_builtins and called_back
    (feature_names) are the passes' own: every library function called_back knows to call
    back a function, and every builtin item_builtins rewrites."""
    from adgen.transforms import called_back, feature_names, item_builtins

    callers = {f.__name__ for f in (*called_back._KEYED, *called_back._FIRST)} | {
        n for names in called_back._KEYED_IN.values() for n in names}
    assert callers <= feature_names.CALLBACK_CALLERS
    assert {"sort", "accumulate"} <= feature_names.CALLBACK_CALLERS  # xs.sort, itertools'
    assert called_back._NAMES is feature_names.CALLBACK_CALLERS
    assert item_builtins._CALLED is feature_names.ITEM_BUILTINS
