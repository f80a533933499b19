"""The ``adgen`` command line: every option and every error path, run as a user runs it.

Each test writes real files into ``tmp_path`` and runs ``python -m adgen`` (or the ``adgen``
console script) in a subprocess, then checks the exit status (0 ok, 1 errors in the code, 2
usage errors), stdout and stderr. Tests that need generated code are skipped until the
compiler (``adgen.transforms.pipeline``) is importable.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adgen.cli import UsageError, highlight, main, merge_modules

HAVE_COMPILER = importlib.util.find_spec("adgen.transforms.pipeline") is not None
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER,
                                    reason="the compiler (adgen.transforms.pipeline) is missing")

MODEL = """\
import numpy as np

import adgen


@adgen.differentiable
def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


@adgen.differentiable
def mse(y, y_hat):
    return np.mean((y - y_hat) ** 2)


alias = mse  # the same function under a second name is listed once


def plain(x, scale=2.0):
    return np.sum(x * scale)


def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def maybe_aliased(x, y):
    z = x * x
    y[0] = 0.0
    return np.sum(z) + np.sum(y)


CONSTANT = 3

if __name__ == "__main__":
    print("MAIN RAN")
"""

# Lines of MODEL, so assertions name them instead of magic numbers.
FILL_CAPTURE = MODEL.splitlines().index("    y = x * x") + 1
FILL_WRITE = MODEL.splitlines().index("    x.fill(0.0)") + 1


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def adgen_cli(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
              **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adgen", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **(env or {})}, **kwargs)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return write(tmp_path, "model.py", MODEL)


def assert_python(text: str) -> None:
    """Printed code must be Python a user can paste (headers between functions are comments)."""
    ast.parse(text)


# --------------------------------------------------------------------------------------------
# Printing the generated source


@needs_compiler
def test_prints_every_differentiable_function(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "def loss_forward" in r.stdout and "def loss_pullback" in r.stdout
    assert "def mse_forward" in r.stdout and "def mse_pullback" in r.stdout
    assert "plain_forward" not in r.stdout  # not decorated
    assert r.stdout.count("# ---- mse") == 1  # the alias is the same function
    assert "MAIN RAN" not in r.stdout  # the file is imported, not run as a script
    assert "\x1b[" not in r.stdout  # a pipe gets no colours
    assert_python(r.stdout)


@needs_compiler
def test_output_is_adgen_source(model: Path, tmp_path: Path) -> None:
    import adgen

    spec = importlib.util.spec_from_file_location("model", model)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(tmp_path))
    try:
        spec.loader.exec_module(module)
        expected = adgen.source(module.loss)
    finally:
        sys.path.remove(str(tmp_path))
    r = adgen_cli(model, "-f", "loss", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected.strip()


@needs_compiler
def test_console_script_and_relative_paths(model: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("adgen")
    if not script.exists():
        pytest.skip("the adgen console script is not installed next to this python")
    (tmp_path / "sub").mkdir()
    r = subprocess.run([str(script), "../model.py", "-f", "mse"], cwd=tmp_path / "sub",
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert "def mse_pullback" in r.stdout


@needs_compiler
def test_function_by_name_decorated_or_not(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "plain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "def plain_forward" in r.stdout and "loss_forward" not in r.stdout
    assert "# ----" not in r.stdout  # one function: no header
    r = adgen_cli(model, "-f", "plain", "-f", "loss", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("# ---- plain") < r.stdout.index("# ---- loss")  # in the order given
    assert_python(r.stdout)


@needs_compiler
def test_module_imports_its_own_siblings(tmp_path: Path) -> None:
    write(tmp_path, "helpers.py", """\
        import numpy as np

        def sq(x):
            return x * x
        """)
    write(tmp_path, "user.py", """\
        import numpy as np
        import adgen
        from helpers import sq

        @adgen.differentiable
        def f(x):
            return np.sum(sq(x))
        """)
    (tmp_path / "elsewhere").mkdir()
    r = adgen_cli("../user.py", cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
    assert "def f_pullback" in r.stdout


def test_highlight_colours_terminals_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    code = "def f(x):\n    return x * 2.0\n"
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert highlight(code, io.StringIO()) == code
    if importlib.util.find_spec("pygments") is None:
        assert highlight(code, Terminal()) == code
    else:
        coloured = highlight(code, Terminal())
        assert "\x1b[" in coloured
        assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == code
    monkeypatch.setenv("NO_COLOR", "1")
    assert highlight(code, Terminal()) == code


@needs_compiler
def test_show_prints_the_source(capsys: pytest.CaptureFixture[str]) -> None:
    """adgen.show (outside a notebook) prints adgen.source through highlight()."""
    import adgen

    def cube(x):
        return x * x * x

    try:
        import IPython  # noqa: F401
        pytest.skip("with IPython installed, show() displays instead of printing")
    except ImportError:
        pass
    adgen.show(cube)
    assert capsys.readouterr().out.strip() == adgen.source(cube).strip()


@needs_compiler
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_highlighted_on_a_terminal(model: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("pygments") is None:
        pytest.skip("pygments is not installed")
    import pty

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    with subprocess.Popen([sys.executable, "-m", "adgen", str(model), "-f", "mse"],
                          cwd=tmp_path, stdout=follower, stderr=subprocess.PIPE, env=env) as p:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert p.wait(timeout=120) == 0
    os.close(leader)
    out = b"".join(chunks).decode()
    assert "\x1b[" in out and "mse_pullback" in out


# --------------------------------------------------------------------------------------------
# --mutation, --argnums, --explain, --stage, -o


@needs_compiler
def test_strict_policy_reports_certain_conflict(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "fill_after_use", "--mutation", "strict", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == ""
    first = r.stderr.splitlines()[0]
    assert re.match(rf".*model\.py:{FILL_WRITE}:\d+: error: MutationError: ", first), r.stderr
    assert "x.fill(0.0)" in r.stderr and "^" in r.stderr  # the source line and a caret
    assert re.search(rf"\b{FILL_CAPTURE}\b", first), "names the line that captured x"


@needs_compiler
def test_save_policy_is_the_default(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "fill_after_use", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "def fill_after_use_pullback" in r.stdout


@needs_compiler
def test_policy_comes_from_the_decorator(tmp_path: Path) -> None:
    write(tmp_path, "pol.py", """\
        import numpy as np
        import adgen

        @adgen.differentiable(mutation="strict")
        def f(x, y):
            z = x * x
            y[0] = 0.0
            return np.sum(z) + np.sum(y)
        """)
    r = adgen_cli("pol.py", "--explain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "guarded-raise" in r.stdout and "guarded-save" not in r.stdout
    r = adgen_cli("pol.py", "--explain", "--mutation", "save", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "guarded-save" in r.stdout and "guarded-raise" not in r.stdout


@needs_compiler
def test_argnums_is_validated_and_changes_nothing(model: Path, tmp_path: Path) -> None:
    plain = adgen_cli(model, "-f", "mse", cwd=tmp_path)
    for argnums in ("0", "1", "0,1", "-1", "0 1"):
        r = adgen_cli(model, "-f", "mse", "--argnums", argnums, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == plain.stdout  # the pullback returns every argument's cotangent


@pytest.mark.parametrize("argnums", ["2", "-3", "0,5"])
def test_argnums_out_of_range(model: Path, tmp_path: Path, argnums: str) -> None:
    r = adgen_cli(model, "-f", "plain", "--argnums", argnums, cwd=tmp_path)
    assert r.returncode == 2
    assert "out of range for plain(x, scale)" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("argnums", ["x", "", "1.5", "0;1"])
def test_argnums_syntax(model: Path, tmp_path: Path, argnums: str) -> None:
    r = adgen_cli(model, "--argnums", argnums, cwd=tmp_path)
    assert r.returncode == 2
    assert "argument --argnums" in r.stderr


@needs_compiler
def test_explain_lists_mutation_sites(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "fill_after_use", "--explain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"model\.py:{FILL_WRITE}:\d+: guarded-save: ", r.stdout), r.stdout
    r = adgen_cli(model, "-f", "loss", "-f", "mse", "--explain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(r"model\.py:\d+:\d+: free: h\[i\] = ", r.stdout), r.stdout
    assert "# ---- mse" in r.stdout and "no mutation sites" in r.stdout


@needs_compiler
def test_explain_under_strict_reports_the_error(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "fill_after_use", "--explain", "--mutation", "strict",
                  cwd=tmp_path)
    assert r.returncode == 1
    assert "MutationError" in r.stderr


@needs_compiler
def test_every_stage(model: Path, tmp_path: Path) -> None:
    from adgen.transforms.pipeline import PASS_NAMES

    assert PASS_NAMES
    for stage in PASS_NAMES:
        r = adgen_cli(model, "-f", "loss", "--stage", stage, cwd=tmp_path)
        assert r.returncode == 0, (stage, r.stderr)
        assert r.stdout.strip(), stage


@needs_compiler
def test_unknown_stage_lists_the_passes(model: Path, tmp_path: Path) -> None:
    from adgen.transforms.pipeline import PASS_NAMES

    r = adgen_cli(model, "--stage", "no-such-pass", cwd=tmp_path)
    assert r.returncode == 2
    assert "'no-such-pass' is not a compiler pass" in r.stderr
    assert ", ".join(PASS_NAMES) in r.stderr


@needs_compiler
def test_output_module(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "loss", "-o", "loss_adjoint.py", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    text = (tmp_path / "loss_adjoint.py").read_text()
    assert "def loss_forward" in text and "def loss_pullback" in text
    imported = [a.name for n in ast.parse(text).body if isinstance(n, ast.Import)
                for a in n.names] + [n.module for n in ast.parse(text).body
                                     if isinstance(n, ast.ImportFrom)]
    assert not [m for m in imported if m and m.split(".")[0] == "adgen"], imported
    assert_python(text)


@needs_compiler
def test_output_module_with_several_functions(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-o", "all_adjoints.py", cwd=tmp_path)  # every @differentiable
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "all_adjoints.py").read_text()
    for name in ("loss_forward", "loss_pullback", "mse_forward", "mse_pullback"):
        assert f"def {name}(" in text
    assert text.count("import numpy as np") == 1
    assert_python(text)
    # Running the merged module is tests/test_standalone.py's job.


@needs_compiler
def test_output_not_written_on_errors(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "mse", "-f", "fill_after_use", "--mutation", "strict", "-o",
                  "out.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "MutationError" in r.stderr
    assert not (tmp_path / "out.py").exists()


@needs_compiler
def test_output_unwritable(model: Path, tmp_path: Path) -> None:
    r = adgen_cli(model, "-f", "mse", "-o", "no/such/dir/out.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "cannot write no/such/dir/out.py" in r.stderr


def test_exclusive_options(model: Path, tmp_path: Path) -> None:
    for args in (["--explain", "--stage", "x"], ["--explain", "-o", "o.py"],
                 ["--stage", "x", "-o", "o.py"]):
        r = adgen_cli(model, *args, cwd=tmp_path)
        assert r.returncode == 2
        assert "not allowed with argument" in r.stderr


# --------------------------------------------------------------------------------------------
# Compile errors: exit 1, compiler-style diagnostics on stderr


@needs_compiler
def test_compile_error_at_decoration(tmp_path: Path) -> None:
    write(tmp_path, "bad.py", """\
        import adgen


        @adgen.differentiable
        async def f(x):
            return x
        """)
    r = adgen_cli("bad.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert re.match(r".*bad\.py:5:\d+: error: UnsupportedError: ", lines[0]), r.stderr
    assert lines[1].strip() == "async def f(x):"
    assert lines[2].strip() == "^"


@needs_compiler
def test_compile_error_in_one_of_several(tmp_path: Path) -> None:
    write(tmp_path, "two.py", """\
        import numpy as np

        def good(x):
            return np.sum(x * x)

        def bad(x):
            y = x * x
            x.fill(0.0)
            return np.sum(y)
        """)
    r = adgen_cli("two.py", "-f", "bad", "-f", "good", "--mutation", "strict", cwd=tmp_path)
    assert r.returncode == 1
    assert "def good_pullback" in r.stdout  # the others are still printed
    assert re.search(r"two\.py:8:\d+: error: MutationError", r.stderr), r.stderr


@needs_compiler
def test_missing_rule(tmp_path: Path) -> None:
    write(tmp_path, "foreign.py", """\
        import math

        def f(x):
            return math.fsum([x, x]) + 0.0 * len(repr(eval("x")))
        """)
    r = adgen_cli("foreign.py", "-f", "f", cwd=tmp_path)
    assert r.returncode == 1
    assert re.match(r".*foreign\.py:4:\d+: error: \w+Error: ", r.stderr), r.stderr


# --------------------------------------------------------------------------------------------
# Usage errors: exit 2


def test_help_and_version(tmp_path: Path) -> None:
    r = adgen_cli("--help", cwd=tmp_path)
    assert r.returncode == 0
    for option in ("-f NAME", "--argnums", "--mutation {save,strict}", "--explain", "--stage",
                   "-o OUT.py"):
        assert option in r.stdout
    assert "cotangents for all positional arguments" in r.stdout
    r = adgen_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("adgen ")


def test_argparse_errors(model: Path, tmp_path: Path) -> None:
    for args in ([], ["--mutation", "lazy", str(model)], [str(model), "--bogus"],
                 [str(model), "-f"]):
        r = adgen_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, args
        assert r.stderr.startswith("usage: adgen"), args


def test_no_such_file(tmp_path: Path) -> None:
    r = adgen_cli("missing.py", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "adgen: error: missing.py: no such file"


def test_not_a_python_file(tmp_path: Path) -> None:
    write(tmp_path, "model.txt", "x = 1\n")
    r = adgen_cli("model.txt", cwd=tmp_path)
    assert r.returncode == 2
    assert "not a Python file" in r.stderr
    (tmp_path / "folder.py").mkdir()
    r = adgen_cli("folder.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "no such file" in r.stderr


def test_syntax_error_in_file(tmp_path: Path) -> None:
    write(tmp_path, "syn.py", """\
        def f(x):
            return x +* 2
        """)
    r = adgen_cli("syn.py", cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert re.match(r".*syn\.py:2:\d+: error: SyntaxError: ", lines[0]), r.stderr
    assert lines[1].strip() == "return x +* 2"
    assert lines[2].strip() == "^"


def test_file_that_raises_on_import(tmp_path: Path) -> None:
    write(tmp_path, "boom.py", """\
        def helper():
            raise RuntimeError("kaboom")

        helper()
        """)
    r = adgen_cli("boom.py", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("adgen: error: importing boom.py failed:")
    assert "RuntimeError: kaboom" in r.stderr
    assert "importlib" not in r.stderr and "cli.py" not in r.stderr  # only the user's frames


def test_file_that_exits_on_import(tmp_path: Path) -> None:
    write(tmp_path, "quits.py", "import sys\nsys.exit(3)\n")
    r = adgen_cli("quits.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "SystemExit: 3" in r.stderr


def test_no_differentiable_functions(tmp_path: Path) -> None:
    write(tmp_path, "nothing.py", """\
        import numpy as np

        def f(x):
            return np.sum(x)
        """)
    r = adgen_cli("nothing.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "no @adgen.differentiable functions in nothing.py" in r.stderr
    assert "(functions: f)" in r.stderr and "-f NAME" in r.stderr


def test_no_such_function(tmp_path: Path) -> None:
    write(tmp_path, "fns.py", """\
        import numpy as np

        def loss(x):
            return np.sum(x)

        def other(x):
            return x
        """)
    r = adgen_cli("fns.py", "-f", "los", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "adgen: error: fns.py has no function named 'los'; did you mean " \
        "'loss'?"
    r = adgen_cli("fns.py", "-f", "zzz", cwd=tmp_path)
    assert r.returncode == 2
    assert "(functions: loss, other)" in r.stderr
    r = adgen_cli("fns.py", "-f", "np", cwd=tmp_path)
    assert r.returncode == 2
    assert "'np' in fns.py is not a function (type module)" in r.stderr


# --------------------------------------------------------------------------------------------
# In-process: main's return value, and merging several standalone modules into one


def test_main_returns_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert main(["--no-such-option"]) == 2
    assert main(["no_such_file.py"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_merge_modules() -> None:
    one = '"""Adjoint of f."""\nfrom __future__ import annotations\nimport numpy as np\n\n\n' \
          '# helper\ndef h(x):\n    return x\n\n\ndef f_forward(x):\n    return h(x), ()\n'
    two = '"""Adjoint of g."""\nimport numpy as np\nfrom model import g\n\n\n' \
          '# helper\ndef h(x):\n    return x\n\n\ndef g_forward(x):\n    return h(x), ()\n'
    merged = merge_modules([one, two])
    tree = ast.parse(merged)
    assert ast.get_docstring(tree) == "Adjoint of f.\n\nAdjoint of g."
    assert isinstance(tree.body[1], ast.ImportFrom) and tree.body[1].module == "__future__"
    assert merged.count("import numpy as np") == 1
    assert merged.count("def h(x)") == 1 and merged.count("# helper") == 1
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == \
        ["h", "f_forward", "g_forward"]
    assert merge_modules([one]) == one
    clash = two.replace("return x\n\n\ndef g", "return -x\n\n\ndef g")
    with pytest.raises(UsageError, match="different definitions of 'h'"):
        merge_modules([one, clash])


# --------------------------------------------------------------------------------------------
# --args: the code grad compiles for arguments of these kinds


@needs_compiler
def test_args_print_the_specialised_code(model: Path, tmp_path: Path) -> None:
    generic = adgen_cli(model, "-f", "loss", cwd=tmp_path)
    special = adgen_cli(model, "-f", "loss", "--args", "np.ones((3, 2)), np.ones((4, 3))",
                        cwd=tmp_path)
    assert generic.returncode == 0 and special.returncode == 0, special.stderr
    assert_python(special.stdout)
    assert special.stdout != generic.stdout
    assert "np.shape(" in generic.stdout and "np.shape(" not in special.stdout
    import numpy as np

    import adgen

    spec = importlib.util.spec_from_file_location("cli_model_args", model)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    w, x = np.ones((3, 2)), np.ones((4, 3))
    assert special.stdout.rstrip("\n") == adgen.source(mod.loss, w, x).rstrip("\n")


@needs_compiler
@pytest.mark.parametrize("expr, message", [
    ("np.ones(3", "does not evaluate"),
    ("np.ones((3, 2))", "does not fit loss"),
])
def test_args_errors_are_usage_errors(model: Path, tmp_path: Path, expr: str,
                                      message: str) -> None:
    r = adgen_cli(model, "-f", "loss", "--args", expr, "--explain", cwd=tmp_path)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------------------------
# File names: a file named like a standard-library module, and -o onto its own input

NAMED_LIKE_STDLIB = """\
import numpy as np

SCALE = 3.0


def helper(x):
    return x * SCALE


def f(x):
    y = x * x
    x.fill(0.0)
    return np.sum(helper(y)) + np.sum(x)
"""


@needs_compiler
@pytest.mark.parametrize("stem", ["types", "inspect", "numpy"])
def test_file_named_like_another_module(tmp_path: Path, stem: str) -> None:
    """adgen (and numpy) import types and inspect: the user's file must not replace them, in
    sys.modules or on sys.path. Run from another folder: `python -m` puts the current folder
    first on sys.path, where an inspect.py breaks Python itself before adgen runs."""
    (tmp_path / "code").mkdir()
    (tmp_path / "out").mkdir()
    write(tmp_path / "code", f"{stem}.py", NAMED_LIKE_STDLIB)
    r = adgen_cli(f"../code/{stem}.py", "-f", "f", cwd=tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "def f_forward" in r.stdout and "def f_pullback" in r.stdout
    r = adgen_cli(f"../code/{stem}.py", "-f", "f", "-f", "helper", "-o", "f_adjoint.py",
                  cwd=tmp_path / "out")
    assert (r.returncode, r.stderr) == (0, "")
    # the standalone module loads the user's file by path (by name it would get the other
    # module), and leaves the real one in place
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""\
        import json
        import numpy as np
        import {stem} as real
        import f_adjoint
        x = np.array([1.0, -2.0, 0.5])
        out, saved = f_adjoint.f_forward(x)
        (g,) = f_adjoint.f_pullback(saved, 1.0)
        assert real.__file__ != f_adjoint.helper.__code__.co_filename
        print(json.dumps([float(out), x.tolist(), g.tolist()]))
        """)], cwd=tmp_path / "out", capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    out, x_after, g = json.loads(run.stdout)
    x = [1.0, -2.0, 0.5]  # f = sum(3 x^2) + sum(x after the fill, all zeros): f' = 6 x
    assert out == pytest.approx(sum(3.0 * v * v for v in x))
    assert x_after == [0.0, 0.0, 0.0]
    assert g == pytest.approx([6.0 * v for v in x])


@needs_compiler
def test_console_script_in_the_folder_of_inspect_py(tmp_path: Path) -> None:
    """The console script (not `python -m`) run in the folder of a file named inspect.py."""
    script = Path(sys.executable).with_name("adgen")
    if not script.exists():
        pytest.skip("the adgen console script is not installed next to this python")
    write(tmp_path, "inspect.py", NAMED_LIKE_STDLIB)
    r = subprocess.run([str(script), "inspect.py", "-f", "f"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert "def f_pullback" in r.stdout


def test_module_name_of_a_file(tmp_path: Path) -> None:
    from adgen.cli import PRIVATE_PREFIX, module_name

    assert module_name(tmp_path / "my_model.py") == "my_model"
    for stem in ("types", "inspect", "numpy", "class", "my-model"):
        assert module_name(tmp_path / f"{stem}.py").startswith(PRIVATE_PREFIX), stem


@pytest.mark.parametrize("spelling", ["model.py", "./model.py", "sub/../model.py", "link.py"])
def test_output_refuses_its_own_input(model: Path, tmp_path: Path, spelling: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.py").symlink_to(model)
    before = model.read_text()
    r = adgen_cli(model, "-f", "mse", "-o", spelling, cwd=tmp_path)
    assert r.returncode == 2
    assert f"-o {spelling} is the input file" in r.stderr
    assert "model_adjoint.py" in r.stderr  # what to write instead
    assert model.read_text() == before
