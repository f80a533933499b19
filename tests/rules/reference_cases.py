"""Test cases for every reference implementation (``adgen.rules.composites``), keyed by the
NumPy function's name (``registry.all_references()``).

Each case is a call of the NumPy function as a user writes it. Inputs stay where the function
is differentiable: values without ties (order statistics), quantiles that fall between two
order statistics, ``x`` away from the knots of ``interp``, matrices with distinct singular
values (``cond``). A ``refuse`` case is a call the
reference must refuse with ``RuleError`` (a mode or parameter it does not differentiate).
"""

from __future__ import annotations

from rules.cases import C, Case, away_from_zero, pos, randn, refuse, uniform, well_conditioned

import numpy as np

REFERENCE_CASES: dict[str, list[Case]] = {}


def cases(name: str, *items: Case | list[Case]) -> None:
    out: list[Case] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    assert name not in REFERENCE_CASES, name
    REFERENCE_CASES[name] = out


cases("numpy.diff", C(randn(6)), C(randn(3, 4), axis=0), C(randn(3, 5), 2),
      C(randn(2, 3, 4), 1, -2), C(randn(5), prepend=randn(), append=randn(2)),
      C(randn(3, 4), axis=0, prepend=randn(1, 4)), C(randn(4), 0))
cases("numpy.ediff1d", C(randn(5)), C(randn(2, 3)), C(randn(4), randn(2), randn()))
cases("numpy.trapezoid", C(randn(6)), C(randn(3, 5), dx=0.3), C(randn(3, 5), randn(5)),
      C(randn(4, 3), axis=0, x=np.sort(randn(4))), C(randn(3, 4), randn(3, 4), axis=1))
cases("numpy.cumulative_sum", C(randn(5)), C(randn(3, 4), axis=1),
      C(randn(3, 4), axis=0, include_initial=True), refuse(randn(3), dtype=np.float32))
cases("numpy.cumulative_prod", C(randn(5)), C(randn(3, 4), axis=-1),
      C(randn(3, 4), axis=0, include_initial=True))
cases("numpy.ptp", C(randn(6)), C(randn(3, 4), 1), C(randn(3, 4), axis=0, keepdims=True))
cases("numpy.average", C(randn(5)), C(randn(3, 4), 1), C(randn(3, 4), 1, pos(4)),
      C(randn(3, 4), axis=0, weights=pos(3), returned=True), C(randn(3, 4), weights=pos(3, 4)),
      C(randn(2, 3), axis=1, keepdims=True))
cases("numpy.polyval", C(randn(4), randn(5)), C(randn(3), randn()), C(randn(1), randn(2, 2)))
cases("numpy.kron", C(randn(2, 3), randn(3, 2)), C(randn(3), randn(2)), C(randn(2, 2), randn(3)),
      C(randn(2, 1, 2), randn(2, 2)))
cases("numpy.cross", C(randn(3), randn(3)), C(randn(4, 3), randn(3)), C(randn(2), randn(2)),
      C(randn(3, 2), randn(3, 3)), C(randn(3, 4), randn(3, 4), axis=0),
      C(randn(3, 5), randn(5, 3), axisa=0, axisc=0), refuse(randn(4), randn(4)))
cases("numpy.sinc", C(randn(5)), C(np.array([0.0, 1e-5, -2e-4, 0.5, 2.25])), C(randn()),
      C(randn(2, 3)))
cases("numpy.nan_to_num", C(randn(4)), C(np.array([np.nan, np.inf, -np.inf, 0.3, -1.2])),
      C(np.array([np.nan, 2.0, np.inf]), nan=1.5, posinf=9.0, neginf=-9.0),
      refuse(randn(3), copy=False))
cases("numpy.gradient", C(randn(6)), C(randn(4, 5)), C(randn(4, 5), 0.5),
      C(randn(4, 5), axis=1), C(randn(6), edge_order=2), C(randn(3, 4, 5), 2.0, axis=(0, 2)),
      refuse(randn(5), np.linspace(0.0, 1.0, 5)))
cases("numpy.tile", C(randn(3), 2), C(randn(2, 3), (2, 2)), C(randn(2, 3), (2, 1, 3)),
      C(randn(2, 2, 2), 2), C(randn(), 3))
cases("numpy.pad", C(randn(4), 2), C(randn(3, 4), ((1, 2), (0, 3))),
      C(randn(3, 4), 1, constant_values=0.7), C(randn(3, 4), (2, 1), "edge"),
      C(randn(5), (3, 2), mode="reflect"), C(randn(3, 4), 2, "symmetric"),
      C(randn(3, 4), ((1, 0), (4, 2)), "wrap"), C(randn(4), 1, "constant"),
      refuse(randn(4), 2, "maximum"), refuse(randn(4), 2, "reflect", reflect_type="odd"),
      refuse(randn(4), 2, constant_values=(1.0, 2.0)))
cases("numpy.array_split", C(randn(7), 3), C(randn(4, 5), 2, 1), C(randn(6, 2), [1, 4]),
      C(randn(5), 5), C(randn(4, 3), [2, 10], axis=0))
cases("numpy.split", C(randn(6), 3), C(randn(4, 6), 2, axis=1), C(randn(6, 2), [2, 3]),
      C(randn(5), [-2]), refuse(randn(5), 2))
cases("numpy.hsplit", C(randn(4, 6), 3), C(randn(6), [2]), C(randn(2, 4, 3), 2))
cases("numpy.vsplit", C(randn(4, 3), 2), C(randn(6, 2, 2), [1, 3]), refuse(randn(4), 2))
cases("numpy.dsplit", C(randn(2, 3, 4), 2), C(randn(2, 2, 6), [1, 5]), refuse(randn(2, 4), 2))
cases("numpy.quantile", C(randn(7), 0.3), C(randn(4, 5), np.array([0.1, 0.5, 0.9])),
      C(randn(4, 5), 0.3, axis=1), C(randn(4, 5), uniform(0.05, 0.95, 2), axis=0,
                                      keepdims=True),
      C(randn(2, 3, 4), 0.6, axis=(0, 2)), C(randn(3, 4), 0.8, -1, keepdims=True),
      refuse(randn(5), 0.5, method="nearest"))
cases("numpy.percentile", C(randn(7), 30.0), C(randn(4, 5), np.array([10.0, 90.0]), 1),
      C(randn(3, 4), 45.0, axis=0, keepdims=True))
cases("numpy.median", C(randn(7)), C(randn(6)), C(randn(4, 5), 1), C(randn(4, 5), axis=0),
      C(randn(2, 3, 4), (0, 2), keepdims=True))
cases("numpy.interp",
      C(np.array([-1.0, 0.3, 1.7, 2.2, 5.0]), np.array([0.0, 1.0, 2.0, 3.0]), randn(4)),
      C(uniform(0.1, 2.9, 6), np.array([0.0, 0.5, 2.0, 3.0]), randn(4), -2.0, 7.0),
      C(1.25, np.array([0.0, 1.0, 2.0]), randn(3)),
      C(uniform(0.1, 0.9, 3, 2), np.array([0.0, 0.4, 1.0]), randn(3)),
      refuse(randn(3), np.array([0.0, 1.0]), randn(2), period=2.0))
cases("numpy.convolve", C(randn(6), randn(3)), C(randn(3), randn(6)),
      C(randn(6), randn(3), "same"), C(randn(4), randn(7), mode="same"),
      C(randn(6), randn(3), "valid"), C(randn(3), randn(5), "valid"), C(randn(1), randn(4)))
cases("numpy.correlate", C(randn(6), randn(3)), C(randn(3), randn(6)),
      C(randn(6), randn(3), "same"), C(randn(4), randn(7), mode="same"),
      C(randn(6), randn(3), "full"), C(randn(3), randn(5), "full"), C(randn(5), randn(1)))
cases("numpy.linalg.matrix_power", C(randn(3, 3), 3), C(randn(3, 3), 0), C(randn(3, 3), 1),
      C(well_conditioned(3, 3), -2), C(randn(2, 3, 3), 2))
cases("numpy.linalg.cond", C(randn(3, 3)), C(randn(4, 3)), C(well_conditioned(3, 3), 1),
      C(well_conditioned(3, 3), np.inf), C(well_conditioned(3, 3), "fro"),
      C(randn(3, 3), -2), C(well_conditioned(2, 3, 3), "nuc"))
cases("numpy.linalg.lstsq", C(randn(5, 3), randn(5)), C(randn(5, 3), randn(5, 2)),
      C(randn(3, 3) + 3.0 * np.eye(3), randn(3)), C(randn(2, 4), randn(2)))
cases("numpy.linalg.matrix_norm", C(randn(3, 4)), C(randn(2, 3, 3), ord=2),
      C(randn(3, 4), ord="nuc", keepdims=True), C(randn(3, 4), ord=np.inf))
cases("numpy.linalg.vector_norm", C(randn(5)), C(randn(3, 4)), C(randn(3, 4), axis=1, ord=1),
      C(randn(3, 4), keepdims=True), C(away_from_zero(2, 3), axis=(0, 1), ord=3))
cases("numpy.linalg.svdvals", C(randn(3, 4)), C(randn(2, 4, 3)))
cases("numpy.linalg.multi_dot", C([randn(2, 3), randn(3, 4), randn(4)]),
      C([randn(3), randn(3, 2)]))
