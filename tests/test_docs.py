"""The docs cannot drift: their code runs, their generated parts are current, and they build.

- Every ```python block of every page in docs/ runs, in order, in one namespace per page (a
  fresh process per page, its working directory a scratch folder). A block preceded by
  ``<!-- file: NAME.py -->`` is also written to that folder as NAME.py, for the page's shell
  commands and imports. A block preceded by ``<!-- skip: why -->`` does not run; one preceded
  by ``<!-- requires: torch, jax -->`` runs only where those modules are installed (an
  optional extra), and is skipped, as it would be for a reader without them. Blocks fenced
  ```py are program output (generated code shown by the CLI pages), not examples, and do not run.
- ``python docs/gen_docs.py --check``: coverage.md matches the rule registry and every
  generated region (``<!-- gen: adgen ... -->``) matches what the CLI prints now.
- ``mkdocs build --strict`` succeeds (skipped when mkdocs is not installed: the "docs" extra).

Run as a script (``python tests/test_docs.py PAGE.md WORKDIR``) it executes one page.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!-- (skip|file|requires)(?::\s*(.*?))? -->$")


def code_blocks(text: str) -> list[tuple[int, str, str, str]]:
    """The ```python blocks: (first code line, code, marker, marker argument)."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        start, i = i + 1, i + 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if m.group(1) == "python":
            before = next((ln for ln in reversed(lines[:start - 1]) if ln.strip()), "")
            marker = MARKER.match(before.strip())
            blocks.append((start + 1, "\n".join(lines[start:i]) + "\n",
                           marker.group(1) if marker else "",
                           (marker.group(2) or "") if marker else ""))
        i += 1
    return blocks


def run_page(page: Path, workdir: Path) -> int:
    """Executes the page's python blocks in one module namespace; 1 on the first failure."""
    import os

    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module
    for line, code, marker, arg in code_blocks(page.read_text()):
        if marker == "skip":
            continue
        if marker == "requires" and any(importlib.util.find_spec(m.strip()) is None
                                        for m in arg.split(",")):
            print(f"docs/{page.name}:{line}: skipped, needs {arg}")
            continue
        if marker == "file":
            path = workdir / arg
            path.write_text(code)
        else:
            # Blank lines first, so line numbers in errors and in adgen's output are the page's.
            path = workdir / f"{page.stem}_line{line}.py"
            path.write_text("\n" * (line - 1) + code)
        try:
            exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102
        except Exception:  # noqa: BLE001  (any failure of the page's code is reported)
            print(f"docs/{page.name}: the block at line {line} failed:", file=sys.stderr)
            traceback.print_exc()
            return 1
    return 0


# --------------------------------------------------------------------------------------------
# Tests

try:
    import pytest
except ImportError:  # run as a script in an environment without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
    def test_page_code_runs(page: Path, tmp_path: Path) -> None:
        r = subprocess.run([sys.executable, __file__, str(page), str(tmp_path)],
                           capture_output=True, text=True, timeout=600, check=False)
        assert r.returncode == 0, r.stdout + r.stderr

    def test_every_page_has_code_or_is_reference() -> None:
        reference = {"coverage.md", "performance.md", "comparison.md", "limitations.md",
                     "supported.md"}
        for page in PAGES:
            if page.name not in reference:
                assert code_blocks(page.read_text()), f"{page.name} has no python block"

    def test_skips_say_why() -> None:
        for page in PAGES:
            for line, _, marker, arg in code_blocks(page.read_text()):
                assert marker != "skip" or arg, f"{page.name}:{line}: <!-- skip: why -->"
                assert marker != "requires" or re.fullmatch(r"\w+(\.\w+)*(, *\w+(\.\w+)*)*",
                                                            arg or ""), \
                    f"{page.name}:{line}: <!-- requires: module, module -->"

    def test_generated_parts_are_current() -> None:
        r = subprocess.run([sys.executable, str(DOCS / "gen_docs.py"), "--check"],
                           capture_output=True, text=True, timeout=600, check=False)
        assert r.returncode == 0, r.stdout + r.stderr

    def test_how_it_works_shows_every_pass() -> None:
        from adgen.transforms.pipeline import PASS_NAMES

        text = (DOCS / "how-it-works.md").read_text()
        shown = re.findall(r"<!-- gen: adgen energy\.py -f energy --stage (\w+) -->", text)
        assert shown == list(PASS_NAMES), "add or remove a section in docs/how-it-works.md"

    def test_nav_lists_every_page() -> None:
        config = (ROOT / "mkdocs.yml").read_text()
        for page in PAGES:
            assert re.search(rf":\s*{re.escape(page.name)}\s*$", config, re.MULTILINE), \
                f"{page.name} is not in mkdocs.yml's nav"

    def test_mkdocs_build_strict(tmp_path: Path) -> None:
        if importlib.util.find_spec("mkdocs") is None:
            pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
        r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                           timeout=600, check=False)
        assert r.returncode == 0, r.stdout + r.stderr


if __name__ == "__main__":
    sys.exit(run_page(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
