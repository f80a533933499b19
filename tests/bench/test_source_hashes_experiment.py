"""bench.experiments.source_hashes: the hashes that show a refactor of the compiler is a pure
one (the generated code of the bench workloads, byte for byte)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.experiments import source_hashes  # noqa: E402


def test_the_same_tree_hashes_alike_and_a_change_shows(tmp_path: Path) -> None:
    texts = source_hashes.sources(["sum3"])
    assert {k.split("/")[1] for k in texts} == {"save", "reusable", "strict", "no-arguments",
                                                "forward"}
    assert all("def " in v for v in texts.values())  # generated functions, not refusals
    first = source_hashes.hashes(texts)
    assert source_hashes.hashes(source_hashes.sources(["sum3"])) == first
    changed = dict(first)
    key = next(iter(changed))
    changed[key] = "0" * 16
    assert source_hashes.differences(first, changed) == [key]
    assert source_hashes.differences(first, {}) == sorted(first)

    out = tmp_path / "hashes.json"
    assert source_hashes.main(["sum3", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == first
    assert source_hashes.main(["sum3", "--against", str(out)]) == 0
