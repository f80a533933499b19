"""examples/notebook_quickstart.ipynb run top to bottom in a real Jupyter kernel (nbclient).

The kernel is this interpreter (a kernel spec written to a temporary JUPYTER_PATH names
``sys.executable``, so a ``python3`` kernel installed elsewhere on the machine is never
picked). The notebook checks its own gradients against central differences or formulas
derived by hand in ``assert`` cells (an assert that fails stops the run here); this test checks
that those cells are there and ran, and what the kernel displayed: the error of the refused
construct naming its cell and line as IPython does, explain's table, the highlighted source.

Needs the ``notebook`` extra (``pip install -e ".[notebook]"``); skipped without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebook_quickstart.ipynb"
KERNEL = "adgen-test-python"


def cells_by_id(nb) -> dict:
    return {cell["id"]: cell for cell in nb.cells if cell.cell_type == "code"}


def run(nb, home: Path):
    """Executes ``nb`` in a fresh kernel of this interpreter, its working directory ``home``;
    raises CellExecutionError on an error outside a cell tagged raises-exception."""
    pytest.importorskip("ipykernel")
    nbclient = pytest.importorskip("nbclient")
    spec = home / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "adgen tests", "language": "python"}))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JUPYTER_PATH", str(home))  # where jupyter_client looks for KERNEL
        env.setenv("JUPYTER_RUNTIME_DIR", str(home / "runtime"))  # connection files
        env.setenv("IPYTHONDIR", str(home / "ipython"))  # no profile of the user's
        client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=120,
                                         resources={"metadata": {"path": str(home)}})
        client.execute()
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    """The notebook after a run in a fresh kernel of this interpreter."""
    pytest.importorskip("ipykernel")
    pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    return run(nbformat.read(NOTEBOOK, as_version=4), tmp_path_factory.mktemp("jupyter"))


def errors(cell) -> list:
    return [o for o in cell.outputs if o.output_type == "error"]


def result(cell) -> dict:
    (out,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    return out.data


def test_every_cell_ran_and_only_the_refused_one_raised(executed) -> None:
    cells = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in cells)  # the run did not stop early
    raised = [c["id"] for c in cells if errors(c)]
    assert raised == ["refused"]


@pytest.mark.parametrize("cell_id, checks", [
    # each check cell compares adgen with arithmetic that does not go through adgen
    ("loss-grad", ["central_differences(lambda w: loss(w, x), w)"]),
    ("helper", ["central_differences(lambda w: model(w, x), w)"]),
    ("helper-redefined", ["return np.sin(z)", "x.T @ (2 * np.sin(z) * np.cos(z))",
                          "central_differences(lambda w: model(w, x), w)",
                          "assert not np.allclose(g_sin, g_tanh)"]),
    ("constant-rebound", ["SCALE = 5.0", "2 * 5.0 * w", "central_differences(penalty, w)"]),
    ("inplace", ["out[i] +=", "u[1] = 0.0", "central_differences(lambda u: smooth(u.copy()",
                 "assert argument[1] == 0.0"]),
    ("method", ["central_differences(chain.energy, p)"]),
    ("lambda", ["adgen.grad(lambda v:", "np.exp(p) * (1.0 + p)"]),
    ("hessian", ["adgen.hessian(potential)", "4 * q * np.cos(q)", "central_differences("]),
    ("checkpoint", ["checkpoint=True", "(rollout(k + 1e-6) - rollout(k - 1e-6)) / 2e-6"]),
    ("numba", ['backend="numba"', "3 * p ** 2", "central_differences(sum_of_cubes, p)"]),
])
def test_the_checks_are_there_and_passed(executed, cell_id: str, checks: list[str]) -> None:
    cell = cells_by_id(executed)[cell_id]
    for check in checks:
        assert check in cell.source
    assert cell.source.count("assert ") >= 1 and cell.execution_count and not errors(cell)


def test_numba_ran_when_installed(executed) -> None:
    out = "".join(o.get("text", "") for o in cells_by_id(executed)["numba"].outputs)
    try:
        import numba  # noqa: F401
    except ImportError:
        assert "numba is not installed" in out
    else:
        assert out.startswith("numba backend:")


def test_the_refusal_names_the_cell_and_line(executed) -> None:
    cell = cells_by_id(executed)["refused"]
    (error,) = errors(cell)
    assert error.ename == "UnsupportedError"
    lines = cell.source.splitlines()
    line = lines.index("    total = total + np.sum(w)") + 1
    # as IPython's own traceback names it: Cell In[<execution count>], line <line in the cell>
    # (a counter, global calls; calls += 1, is followed since session 29)
    assert error.evalue.startswith(
        f"Cell In[{cell.execution_count}], line {line}: error: UnsupportedError: the global "
        "total")
    assert "\n    total = total + np.sum(w)\n    ^" in error.evalue and "hint:" in error.evalue
    assert "ipykernel" not in error.evalue  # not the temporary file the cell was compiled as


def test_explain_shows_a_table_naming_cells(executed) -> None:
    cells = cells_by_id(executed)
    count = cells["inplace"].execution_count
    data = result(cells["inplace-explain"])
    html = data["text/html"]
    assert html.startswith("<table") and f"Cell In[{count}], line 8</td>" in html
    assert "guarded-save" in html and "free" in html
    assert f"Cell In[{count}], line 8: guarded-save: u[1] = 0.0" in data["text/plain"]
    assert f"Cell In[{cells['loss'].execution_count}], line 4" in \
        result(cells["loss-explain"])["text/html"]


def test_source_is_displayed_as_code(executed) -> None:
    data = result(cells_by_id(executed)["loss-source"])
    assert data["text/plain"].startswith("import numpy as np\n")  # the text, not its repr
    assert "def loss_pullback" in data["text/plain"]
    assert "loss_pullback" in data["text/html"] and "<span style=" in data["text/html"]


AUTORELOAD = [
    "%load_ext autoreload\n%autoreload 2\nimport os\nimport numpy as np\nimport adgen",
    # a module beside the notebook, imported and differentiated
    "from pathlib import Path\n"
    "Path('edited.py').write_text('import numpy as np\\n\\n\\ndef f(x):\\n'\n"
    "                            '    return np.sum(np.sin(x))\\n')\n"
    "import edited\n"
    "f_before = edited.f\n"
    "x = np.array([0.3, -1.1, 2.0])\n"
    "assert np.allclose(adgen.grad(edited.f)(x), np.cos(x))",
    # the module edited: a helper above f, so f's lines move, and another body
    "Path('edited.py').write_text('import numpy as np\\n\\n\\ndef helper(x):\\n'\n"
    "                            '    return x * x\\n\\n\\ndef f(x):\\n'\n"
    "                            '    return np.sum(helper(x) * np.cos(x))\\n')\n"
    "stat = os.stat('edited.py')\n"
    "os.utime('edited.py', (stat.st_atime + 10, stat.st_mtime + 10))  # autoreload sees it",
    # autoreload ran before this cell: f patched in place, and its gradient is the new one
    "g = adgen.grad(edited.f)(x)\n"
    "assert edited.f is f_before\n"
    "assert np.allclose(g, 2 * x * np.cos(x) - x * x * np.sin(x))\n"
    "print(edited.f.__code__.co_firstlineno)",
    # a function defined in a %%time cell has no source: refused, naming the magic
    "%%time\ndef timed(x):\n    return np.sum(x ** 2)\n\nadgen.grad(timed)(x)",
]


def test_autoreload_and_timing_magics_in_a_real_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in AUTORELOAD]
    nb.cells[-1].metadata["tags"] = ["raises-exception"]
    run(nb, tmp_path)
    assert [errors(c) for c in nb.cells[:-1]] == [[]] * (len(AUTORELOAD) - 1)
    printed = "".join(o.get("text", "") for o in nb.cells[3].outputs)
    # IPython 9 patches f's code (first line 1); an older autoreload rebinds it in place too
    assert printed.strip().isdigit()
    (error,) = errors(nb.cells[-1])
    assert error.ename == "MissingRuleError" and "%%time (<timed exec>)" in error.evalue
