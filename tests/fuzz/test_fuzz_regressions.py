"""Fixed fuzzer failures (and hand-picked seeds), replayed on every run.

Each file in tests/fuzz/regressions/ is a program module exactly as the fuzzer prints it: the
helpers, ``f``, and the generator's ground truth (SEED, MAY_NEED, CONFLICTS) at the bottom,
below the program so that no line of ``f`` moves. Add one by saving a failure's printed
module there, with a DESCRIPTION line saying what broke.
"""

from __future__ import annotations

from pathlib import Path

import progen
import pytest

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.py"))


def test_regression_folder_is_not_empty() -> None:
    assert REGRESSIONS, "tests/fuzz/regressions/ holds no program"


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression(path: Path, tmp_path: Path) -> None:
    module = progen.load(path.read_text(), tmp_path)
    verdict = progen.check_program(module.f, progen.make_args(module.SEED), module.MAY_NEED,
                                   module.CONFLICTS, reuse=True)
    assert not verdict.rejected, f"{path.name}: the inputs are unusable ({verdict.reason})"
