"""The first gradient in a fresh process makes no dataclass (issue 15, cold start): creating
one execs generated code for its ``__init__``, ``__repr__`` and ``__eq__`` (0.2-0.9 ms a
class), and the compiler's records on the first gradient's path (the reverse pass's sites,
captures, recording and result, Compiled, LeanFacts...) are plain classes. Neither
``import adgen`` nor that gradient imports numpy.random (NumPy imports it on first use of
``np.random``). The gradients are still the right ones."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from gradcheck import numerical_grad

USER_FILE = '''import numpy as np


def f(x):
    y = np.sin(x) * x
    z = np.exp(-y)
    w = z / (1.0 + x ** 2)
    return np.sum(w * y)


def shifted_in_place(x):
    out = np.zeros_like(x)
    out[1:] = x[:-1] ** 2
    out += np.sin(x)
    return np.sum(np.tanh(out) * x)
'''

SCRIPT = '''import dataclasses, json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adgen
from cold_start_user import f, shifted_in_place

made = []
process_class = dataclasses._process_class


def noting(cls, *args, **kwargs):
    made.append(cls.__module__ + "." + cls.__qualname__)
    return process_class(cls, *args, **kwargs)


dataclasses._process_class = noting
x = np.linspace(0.1, 1.0, 5)
out = {"f": adgen.grad(f)(x).tolist(), "made by f": list(made),
       "numpy.random after f": "numpy.random" in sys.modules,
       "forward mode after f": "adgen.higher_order" in sys.modules,
       "save": adgen.grad(shifted_in_place)(x).tolist(),
       "strict": adgen.grad(shifted_in_place, mutation="strict")(x).tolist()}
print(json.dumps(out))
'''


def _user_module(tmp_path: Path, name: str):
    """The user's module ``name`` of ``tmp_path``, imported in this process and left out of
    sys.modules (another test's user module may have the same name)."""
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_first_gradient_makes_no_dataclass_and_is_right(tmp_path):
    (tmp_path / "cold_start_user.py").write_text(USER_FILE)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, check=True, cwd=tmp_path)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["made by f"] == []
    assert out["numpy.random after f"] is False  # 36 M instructions, more than a fifth
    # nor forward mode (adgen.higher_order and 5 modules it imports): made_containers asked
    # adgen for jacfwd, hessian... to tell a g = adgen.grad(loss) made inside the function
    assert out["forward mode after f"] is False
    user = _user_module(tmp_path, "cold_start_user")
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(out["f"], numerical_grad(user.f, (x,), 0), rtol=1e-6,
                               atol=1e-8)
    expected = numerical_grad(user.shifted_in_place, (x,), 0)
    np.testing.assert_allclose(out["save"], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out["strict"], expected, rtol=1e-6, atol=1e-8)


DRAWS_FILE = '''import numpy as np


def add_noise(x, rng):
    return x + 0.1 * rng.standard_normal(x.shape)


def masked(h, p, seed):
    rng = np.random.default_rng(seed)
    keep = rng.random(h.shape) > p
    return h * keep / (1.0 - p)


def noisy_loss(x, seed):
    rng = np.random.default_rng(seed)
    h = masked(np.sin(add_noise(x, rng)), 0.3, seed + 1)
    return np.sum(h * x)
'''

DRAWS_SCRIPT = '''import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adgen
imported = "numpy.random" in sys.modules
from cold_start_draws import noisy_loss
x = np.linspace(0.1, 1.0, 5)
print(json.dumps({"numpy.random after import adgen": imported,
                  "save": adgen.grad(noisy_loss)(x, 3).tolist(),
                  "strict": adgen.grad(noisy_loss, mutation="strict")(x, 3).tolist()}))
'''


def test_import_adgen_leaves_numpy_random_unimported_and_draws_are_still_seen(tmp_path):
    """``import adgen`` does not import numpy.random (36 M instructions, a sixth of it); a
    draw in a helper given a generator the user made after the import is still a constant
    of the forward pass (random_draws.is_draw reads numpy.random once it is imported), and
    so is a generator a helper makes from a seed it is given (analyses.activity)."""
    (tmp_path / "cold_start_draws.py").write_text(DRAWS_FILE)
    done = subprocess.run([sys.executable, "-c", DRAWS_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, check=True, cwd=tmp_path)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["numpy.random after import adgen"] is False
    user = _user_module(tmp_path, "cold_start_draws")
    x = np.linspace(0.1, 1.0, 5)
    expected = numerical_grad(lambda v: user.noisy_loss(v, 3), (x,), 0)
    np.testing.assert_allclose(out["save"], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out["strict"], expected, rtol=1e-6, atol=1e-8)


IMPORT_SCRIPT = '''import dataclasses, json
made = []
process_class = dataclasses._process_class


def noting(cls, *args, **kwargs):
    made.append(cls.__module__ + "." + cls.__qualname__)
    return process_class(cls, *args, **kwargs)


dataclasses._process_class = noting
import adgen
print(json.dumps(made))
'''


def test_import_adgen_makes_no_dataclass():
    """``import adgen`` makes no dataclass (each execs generated methods, 0.2-0.9 ms a
    class): analyses.activity's Activity, tangent_calls' two call records and
    analyses.effects' Write / Effects are written out, and the public MutationSite is a
    frozen record whose dataclass fields are made at their first use
    (test_mutation_site_is_still_a_dataclass_to_users)."""
    done = subprocess.run([sys.executable, "-c", IMPORT_SCRIPT], capture_output=True,
                          text=True, check=True)
    made = json.loads(done.stdout.strip().splitlines()[-1])
    assert made == [], made


def test_mutation_site_is_still_a_dataclass_to_users():
    """adgen.MutationSite was a frozen dataclass; users copy it with dataclasses.replace and
    read it with fields / asdict / astuple: all still work, and it stays frozen, compared
    and hashed by its fields, and matched by position."""
    import dataclasses

    import pytest

    import adgen

    site = adgen.MutationSite("m.py", 3, 4, "x[0] = y", "guarded-save", "may overwrite x",
                              (2,))
    assert dataclasses.is_dataclass(site)
    later = dataclasses.replace(site, bytes_saved=64)
    assert type(later) is adgen.MutationSite
    assert (later.file, later.line, later.col, later.captured_at, later.bytes_saved) == \
        ("m.py", 3, 4, (2,), 64)
    assert site.bytes_saved is None and later != site
    assert dataclasses.replace(later, bytes_saved=None) == site
    assert hash(dataclasses.replace(later, bytes_saved=None)) == hash(site)
    assert [f.name for f in dataclasses.fields(site)] == [
        "file", "line", "col", "construct", "decision", "reason", "captured_at", "bytes_saved"]
    assert dataclasses.asdict(later)["bytes_saved"] == 64
    assert dataclasses.astuple(site)[:3] == ("m.py", 3, 4)
    assert repr(site).startswith("MutationSite(file='m.py', line=3, col=4,")
    with pytest.raises(dataclasses.FrozenInstanceError):
        site.line = 5  # type: ignore[misc]
    match site:
        case adgen.MutationSite(file, line):
            assert (file, line) == ("m.py", 3)
