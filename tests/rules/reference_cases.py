"""Test cases for every reference implementation (``adgen.rules.composites``), keyed by the
NumPy function's name (``registry.all_references()``).

Each case is a call of the NumPy function as a user writes it. Inputs stay where the function
is differentiable: values without ties (order statistics), quantiles that fall between two
order statistics, ``x`` away from the knots of ``interp``, matrices with distinct singular
values (``cond``). A ``refuse`` case is a call the
reference must refuse with ``RuleError`` (a mode or parameter it does not differentiate).
"""

from __future__ import annotations

import numpy as np

from rules.cases import C, Case, away_from_zero, pos, randn, refuse, uniform, well_conditioned

REFERENCE_CASES: dict[str, list[Case]] = {}


def cases(name: str, *items: Case | list[Case]) -> None:
    out: list[Case] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    assert name not in REFERENCE_CASES, name
    REFERENCE_CASES[name] = out


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
      # coordinates of a non-uniform grid (differentiated too) and one spacing per axis;
      # fixed values, not draws, so the cases below keep theirs
      C(randn(5), np.array([0.0, 0.1, 0.4, 0.5, 0.9])),
      C(np.sin(np.arange(20.0)).reshape(4, 5), np.array([0.0, 0.3, 0.4, 1.0]), 0.5,
        edge_order=2),
      C(np.cos(np.arange(12.0)).reshape(3, 4), 0.5, 2.0),
      refuse(np.cos(np.arange(5.0)), np.array([0.0, 0.5, 1.0])))
cases("numpy.tile", C(randn(3), 2), C(randn(2, 3), (2, 2)), C(randn(2, 3), (2, 1, 3)),
      C(randn(2, 2, 2), 2), C(randn(), 3))
cases("numpy.pad", C(randn(4), 2), C(randn(3, 4), ((1, 2), (0, 3))),
      C(randn(3, 4), 1, constant_values=0.7), C(randn(3, 4), (2, 1), "edge"),
      C(randn(5), (3, 2), mode="reflect"), C(randn(3, 4), 2, "symmetric"),
      C(randn(3, 4), ((1, 0), (4, 2)), "wrap"), C(randn(4), 1, "constant"),
      C(randn(4), 2, "maximum"), refuse(randn(4), 2, "reflect", reflect_type="odd"),
      refuse(randn(4), 2, constant_values=(1.0, 2.0)))
cases("numpy.array_split", C(randn(7), 3), C(randn(4, 5), 2, 1), C(randn(6, 2), [1, 4]),
      C(randn(5), 5), C(randn(4, 3), [2, 10], axis=0))
cases("numpy.split", C(randn(6), 3), C(randn(4, 6), 2, axis=1), C(randn(6, 2), [2, 3]),
      C(randn(5), [-2]), refuse(randn(5), 2))
cases("numpy.hsplit", C(randn(4, 6), 3), C(randn(6), [2]), C(randn(2, 4, 3), 2))
cases("numpy.vsplit", C(randn(4, 3), 2), C(randn(6, 2, 2), [1, 3]), refuse(randn(4), 2))
cases("numpy.dsplit", C(randn(2, 3, 4), 2), C(randn(2, 2, 6), [1, 5]), refuse(randn(2, 4), 2))
cases("numpy.interp",
      C(np.array([-1.0, 0.3, 1.7, 2.2, 5.0]), np.array([0.0, 1.0, 2.0, 3.0]), randn(4)),
      C(uniform(0.1, 2.9, 6), np.array([0.0, 0.5, 2.0, 3.0]), randn(4), -2.0, 7.0),
      C(1.25, np.array([0.0, 1.0, 2.0]), randn(3)),
      C(uniform(0.1, 0.9, 3, 2), np.array([0.0, 0.4, 1.0]), randn(3)),
      C(randn(3), np.array([0.0, 1.0]), randn(2), period=2.0),
      # (period= since session 27: fixed values, xp unsorted and beyond the period)
      C(np.array([0.3, -1.2, 4.3, 2.7]), np.array([2.5, 0.2, 4.1, 1.9]),
        np.array([0.3, -1.0, 2.0, 0.5]), period=-3.0),
      refuse(np.array([0.5]), np.array([0.0, 1.0]), np.array([1.0, 2.0]), period=0.0))
cases("numpy.convolve", C(randn(6), randn(3)), C(randn(3), randn(6)),
      C(randn(6), randn(3), "same"), C(randn(4), randn(7), mode="same"),
      C(randn(6), randn(3), "valid"), C(randn(3), randn(5), "valid"), C(randn(1), randn(4)),
      # a number for either operand (session 29; no draws): numpy takes it as a 1-D array,
      # the reference raised IndexError (np.shape(2.5)[0])
      C(np.array([0.3, -1.2, 0.8]), 2.5), C(-0.7, np.array([0.3, 1.1])),
      C(np.array([0.3, -1.2, 0.8, 0.4]), 1.5, "same"))
cases("numpy.correlate", C(randn(6), randn(3)), C(randn(3), randn(6)),
      C(randn(6), randn(3), "same"), C(randn(4), randn(7), mode="same"),
      C(randn(6), randn(3), "full"), C(randn(3), randn(5), "full"), C(randn(5), randn(1)))
cases("numpy.linalg.matrix_power", C(randn(3, 3), 3), C(randn(3, 3), 0), C(randn(3, 3), 1),
      C(well_conditioned(3, 3), -2), C(randn(2, 3, 3), 2))
# (p = np.inf, a float, is differentiated by the case's user function: the derivative then
# reaches norm's ord, refused since ba4174d compiles the reference for the arguments passed
# with one; -1, an int, is a constant)
cases("numpy.linalg.cond", C(randn(3, 3)), C(randn(4, 3)), C(well_conditioned(3, 3), 1),
      C(well_conditioned(3, 3), -1), C(well_conditioned(3, 3), "fro"),
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

# --------------------------------------------------------------------------------------------
# composites_stats.py


def with_nans(*shape: int) -> np.ndarray:
    """Random values with a NaN in every other row (never a whole row of NaNs)."""
    x = randn(*shape)
    flat = x.reshape(-1, shape[-1]) if len(shape) > 1 else x.reshape(1, -1)
    flat[::2, 1] = np.nan
    return x


cases("numpy.nansum", C(with_nans(6)), C(with_nans(3, 4), 1), C(with_nans(3, 4), axis=0,
                                                                 keepdims=True))
cases("numpy.nanprod", C(with_nans(5)), C(with_nans(3, 4), axis=1))
cases("numpy.nanmax", C(with_nans(6)), C(with_nans(3, 4), 1), C(with_nans(3, 4), keepdims=True))
cases("numpy.nanmin", C(with_nans(6)), C(with_nans(3, 4), axis=0))
cases("numpy.nanmean", C(with_nans(6)), C(with_nans(3, 4), 1), C(randn(3, 4), keepdims=True))
cases("numpy.nanvar", C(with_nans(6)), C(with_nans(3, 4), 1, ddof=1),
      C(randn(3, 4), axis=0, keepdims=True))
cases("numpy.nanstd", C(with_nans(6)), C(with_nans(3, 4), axis=1))
cases("numpy.nancumsum", C(with_nans(6)), C(with_nans(3, 4), 1))
cases("numpy.nancumprod", C(with_nans(5)), C(with_nans(3, 4), axis=0))
cases("numpy.nanquantile", C(with_nans(7), 0.3), C(with_nans(4, 6), np.array([0.23, 0.71]), 1),
      C(randn(3, 5), 0.45, axis=0, keepdims=True))
cases("numpy.nanpercentile", C(with_nans(7), 35.0), C(with_nans(4, 6), 62.0, axis=1))
cases("numpy.nanmedian", C(with_nans(8)), C(with_nans(4, 6), 1))
cases("numpy.cov", C(randn(3, 6)), C(randn(6, 3), rowvar=False), C(randn(5), randn(5)),
      C(randn(2, 5), bias=True), C(randn(3, 6), ddof=2), C(randn(4)))
cases("numpy.corrcoef", C(randn(3, 6)), C(randn(5), randn(5)), C(randn(6, 2), rowvar=False))
cases("numpy.histogram_bin_edges", C(randn(20)), C(randn(20), 5, (-2.0, 2.0)),
      C(randn(10), np.array([-1.0, 0.0, 0.5, 1.0])))
cases("numpy.histogram", C(randn(20)), C(randn(30), 4, (-3.0, 3.0), weights=pos(30)),
      C(randn(25), 5, density=True), C(randn(25), np.array([-1.0, 0.0, 2.0]), weights=randn(25)),
      refuse(randn(10), "auto"))
cases("numpy.bincount", C(np.array([0, 2, 2, 5]), randn(4)), C(np.array([1, 1, 3]), randn(3), 6),
      C(np.array([0, 3, 3])))

# --------------------------------------------------------------------------------------------
# composites_more.py

cases("numpy.polyadd", C(randn(3), randn(5)), C(randn(4), randn(2)))
cases("numpy.polysub", C(randn(3), randn(5)), C(randn(4), randn(4)))
cases("numpy.polymul", C(randn(3), randn(4)), C(randn(1), randn(3)))
cases("numpy.polyder", C(randn(5)), C(randn(5), 2), C(randn(4), m=3))
cases("numpy.polyint", C(randn(4)), C(randn(4), 2), C(randn(3), 2, randn(2)), C(randn(3), k=randn()))
cases("numpy.poly", C(randn(3)), C(randn(1)))
cases("numpy.vander", C(randn(4)), C(randn(4), 3), C(np.array([0.0, 1.5, -2.0]), increasing=True),
      C(randn(3), 5, True))
cases("numpy.polyfit", C(np.linspace(-1.0, 1.0, 8), randn(8), 2),
      C(np.linspace(0.0, 2.0, 6), randn(6, 2), 1), refuse(randn(5), randn(5), 1, full=True),
      # w= (session 29; no draws): weights differentiated too, one y and two
      C(np.linspace(-1.0, 1.0, 6), np.array([0.3, -1.2, 0.8, 2.1, 0.45, -0.6]), 2,
        w=np.array([1.0, 0.5, 2.0, 1.5, 0.8, 1.2])),
      C(np.linspace(0.0, 2.0, 5), np.array([[0.3, 1.0], [-1.2, 0.2], [0.8, 0.7], [2.1, -0.4],
                                            [0.45, 1.1]]), 1, None, False,
        np.array([1.0, 0.5, 2.0, 1.5, 0.8])))
cases("numpy.polydiv", C(randn(5), randn(3)), C(randn(4), randn(4)), C(randn(2), randn(3)))
cases("numpy.append", C(randn(3), randn(2)), C(randn(2, 3), randn(2, 2), 1),
      C(randn(2, 3), randn(4)), C(randn(2, 3), randn(1, 3), axis=0))
cases("numpy.delete", C(randn(5), 2), C(randn(4, 3), [0, 2], 0), C(randn(3, 4), slice(1, 3), 1),
      C(randn(2, 3), -1))
cases("numpy.insert", C(randn(5), 2, randn()), C(randn(5), [1, 3], randn(2)),
      C(randn(3, 4), 1, randn(4), axis=0), C(randn(3, 4), [0, 4], randn(3, 2), axis=1),
      C(randn(4), -1, 7.5), refuse(randn(4), slice(0, 2), randn(2)))
cases("numpy.compress", C(np.array([True, False, True]), randn(3, 2), 0),
      C([False, True], randn(3, 2), axis=1), C(np.array([1, 0, 1, 1]), randn(2, 2)))
cases("numpy.extract", C(np.array([[True, False], [False, True]]), randn(2, 2)))
cases("numpy.resize", C(randn(4), 7), C(randn(2, 3), (3, 4)), C(randn(5), (2, 2)))
cases("numpy.dstack", C([randn(3), randn(3)]), C((randn(2, 3), randn(2, 3, 2))))
cases("numpy.block", C([randn(2), randn(3)]), C([[randn(2, 2), randn(2, 3)],
                                                  [randn(1, 2), randn(1, 3)]]),
      C([[randn(2), randn(3)], [randn(1, 2), randn(1, 3)]]))
cases("numpy.choose", C(np.array([0, 2, 1]), [randn(3), randn(3), randn(3)]),
      C(np.array([[1, 0], [0, 1]]), [randn(2, 2), randn()]))
cases("numpy.select", C([np.array([True, False, False]), np.array([False, True, False])],
                        [randn(3), randn(3)], 1.5),
      C([randn(4) > 0], [randn(4)]))
cases("numpy.partition", C(randn(6), 2), C(randn(3, 5), 1, axis=0), C(randn(3, 5), [1, 3]),
      C(randn(2, 3), 4, None))
cases("numpy.diagflat", C(randn(3)), C(randn(2, 2), 1), C(randn(2), k=-1))
cases("numpy.astype", C(randn(3), np.float64), C(randn(3), np.int64))
cases("numpy.broadcast_arrays", C(randn(3), randn(2, 1)), C(randn(2, 3), randn(), randn(3)))
cases("numpy.meshgrid", C(randn(3), randn(2)), C(randn(3), randn(2), indexing="ij"),
      C(randn(2), randn(3), randn(2)), C(randn(4)), refuse(randn(2), randn(3), sparse=True))
cases("numpy.copysign", C(randn(4), randn(4)), C(randn(3), -1.0), C(randn(2, 3), randn(3)))
cases("numpy.float_power", C(pos(4), randn(4)), C(pos(2, 3), 1.5))
cases("numpy.divmod", C(randn(4) * 5, pos(4)), C(randn(3) * 5, 2.5))
cases("numpy.modf", C(randn(5) * 3), C(randn()))
cases("numpy.frexp", C(randn(5) * 5), C(pos(2, 2)))
cases("numpy.ldexp", C(randn(4), np.array([1, -2, 0, 3])), C(randn(2, 2), 3))
cases("numpy.unwrap", C(np.cumsum(uniform(0.5, 2.5, 8))), C(np.cumsum(uniform(0.5, 2.5, 8)), 2.0),
      C(np.cumsum(uniform(0.5, 2.5, 3, 6), axis=1), axis=1),
      C(np.cumsum(uniform(0.5, 2.5, 7)), period=4.0))
cases("numpy.logspace", C(randn(), randn(), 5), C(randn(), randn(), 4, False, 2.0),
      C(randn(3), randn(3), 3))
cases("numpy.geomspace", C(pos(), pos() + 3.0, 5), C(-pos(), -pos() - 2.0, 4, False),
      C(pos(2), pos(2) + 1.0, 3))
cases("numpy.matvec", C(randn(3, 4), randn(4)), C(randn(2, 3, 4), randn(2, 4)))
cases("numpy.vecmat", C(randn(3), randn(3, 4)), C(randn(2, 3), randn(2, 3, 4)))
cases("numpy.vecdot", C(randn(3), randn(3)), C(randn(2, 3), randn(3)), C(randn(3, 2), randn(3, 2),
                                                                        axis=0))
cases("numpy.linalg.vecdot", C(randn(3), randn(3)), C(randn(2, 3), randn(2, 3), axis=-1))
cases("numpy.linalg.cross", C(randn(3), randn(3)), C(randn(2, 3), randn(2, 3)),
      C(randn(3, 2), randn(3, 2), axis=0), refuse(randn(2), randn(2)))
cases("numpy.linalg.diagonal", C(randn(3, 3)), C(randn(2, 3, 4), offset=1))
cases("numpy.linalg.matmul", C(randn(2, 3), randn(3, 2)), C(randn(3), randn(3, 2)))
cases("numpy.linalg.outer", C(randn(3), randn(2)))
cases("numpy.linalg.tensordot", C(randn(2, 3), randn(3, 4), axes=1), C(randn(2, 3), randn(2, 3)))
cases("numpy.linalg.trace", C(randn(3, 3)), C(randn(2, 3, 3), offset=1))
cases("numpy.linalg.tensorinv", C(well_conditioned(6, 6).reshape(6, 2, 3), ind=1),
      C(well_conditioned(4, 4).reshape(2, 2, 2, 2)))
cases("numpy.linalg.tensorsolve", C(well_conditioned(6, 6).reshape(2, 3, 6), randn(2, 3)),
      C(well_conditioned(4, 4), randn(4)))
cases("copy.deepcopy", C(randn(3)), C({"a": randn(2), "b": [randn(3), 2.0]}),
      C((randn(2), randn(2, 2))), C([{"w": randn(2)}, (randn(3), 1)]))
cases("adgen.rules.composites_more.deepcopied_item", C({"w": randn(2), "n": 3}),
      C([randn(3), 2.0]), C(randn(2, 2)))
cases("adgen.rules.composites_more.deepcopied_leaf", C(randn(3)), C(2.0))
# empty and 0-d inputs
REFERENCE_CASES["numpy.kron"] += [C(randn(), randn(2)), C(randn(2), randn())]
REFERENCE_CASES["numpy.tile"] += [C(np.zeros((0, 2)), 3)]
REFERENCE_CASES["numpy.trapezoid"] += [C(randn(1))]
REFERENCE_CASES["numpy.ediff1d"] += [C(randn(1))]
REFERENCE_CASES["numpy.nansum"] += [C(np.zeros((0, 3)), 0)]
REFERENCE_CASES["numpy.pad"] += [C(np.zeros((0, 2)), 1)]


# Forward mode's tangent helpers of the decompositions, compiled from their own source when
# tangent code is differentiated again (hvp, hessian): the dot-product test of their vjps in
# the tangent d and the matrix a (values apart, rank full)
_HELPERS = "adgen.rules.helpers_jvp."
cases(_HELPERS + "eigh_jvp", C(randn(3, 3), randn(3, 3), "L", True),
      C(randn(3, 3), randn(3, 3), "U", True), C(randn(2, 3, 3), randn(2, 3, 3), "L", False))
cases(_HELPERS + "svd_jvp", C(randn(4, 3), randn(4, 3), False, True),
      C(randn(2, 4), randn(2, 4), False, True), C(randn(3, 3), randn(3, 3), True, True),
      C(randn(3, 2), randn(3, 2), True, False), refuse(randn(3, 2), randn(3, 2), True, True))
cases(_HELPERS + "qr_jvp", C(randn(4, 3), randn(4, 3), "reduced"),
      C(randn(2, 3), randn(2, 3), "r"), C(randn(3, 3), randn(3, 3), "complete"),
      refuse(randn(3, 3), randn(3, 3), "raw"))
cases(_HELPERS + "qr_square_jvp", C(randn(4, 3), randn(4, 3), np.triu(well_conditioned(3))))
cases(_HELPERS + "pinv_jvp", C(randn(3, 2), randn(2, 3), randn(3, 2)))
# np.prod's adjoint (g, a, axis, keepdims), compiled from its source under hessian: zeros in a
cases("adgen.rules.helpers_core.prod_vjp", C(randn(), randn(4), None, False),
      C(randn(), np.array([0.0, 1.5, -0.7]), None, False),
      C(randn(), np.array([0.0, 1.5, 0.0, 2.0]), None, False),
      C(randn(3), randn(3, 4), 1, False), C(randn(1, 4), randn(3, 4), 0, True),
      C(randn(2), randn(2, 3, 2), (1, 2), False), C(randn(), randn(), None, False))
# np.cumprod's tangent (d, out, a, axis), compiled from its source under hessian (out is
# cumprod(a) in use). Its branch for an a with a zero is not tested here: a difference step
# moves a off zero and into the other branch, which reads out as an input of its own; it is
# checked through np.cumprod in tests/test_second_order_prod.py
_a = randn(3, 4)
cases("adgen.rules.helpers_jvp.cumprod_jvp", C(randn(3, 4), np.cumprod(_a, 1), _a, 1),
      C(randn(4), np.cumprod(_a[0]), _a[0], None))
# np.linalg.norm's adjoint (g, out, x, ord, axis, keepdims) and the matrix norms' (g, x, ord,
# axis, keepdims), compiled from their source under hessian (out is the norm in use; here
# an input of its own, away from zero), and the shape helper they call
_x = away_from_zero(4)
_m = randn(3, 3)
cases("adgen.rules.helpers_linalg.norm_vjp",
      C(randn(), pos() + 1.0, _x, None, None, False), C(randn(), pos() + 1.0, _x, 1, None, False),
      C(randn(), pos() + 1.0, _x, 3, None, False), C(randn(), pos() + 1.0, _x, 2.5, 0, False),
      C(randn(), pos() + 1.0, _m, "fro", None, False),
      C(randn(3), pos(3) + 1.0, _m, 2, 1, False), C(randn(1, 3), pos(1, 3) + 1.0, _m, 3, 0, True))
cases("adgen.rules.helpers_linalg.matrix_norm_vjp", C(randn(), _m, "nuc", (0, 1), False),
      C(randn(), _m, 2, (0, 1), False), C(randn(), _m, -2, (1, 0), False),
      C(randn(1, 1), _m, 2, (0, 1), True))
cases("adgen.rules.helpers_core.expand_reduced", C(randn(3), (3, 4), 1, False),
      C(randn(3, 1), (3, 4), 1, True), C(randn(), (2, 2), None, False))
# np.quantile's tangent's derivatives (third derivatives: reverse and forward mode read their
# source again) and the positions they share: values apart (no ties), q off the grid points
_qa = np.array([0.3, -1.2, 2.0, 0.7, -0.4, 1.1])
_qm = _qa.reshape(2, 3)
cases("adgen.rules.helpers_decomp.quantile_positions", C(_qa, 0.3, None),
      C(_qm, np.array([0.2, 0.7]), 1), C(_qm, 0.45, (0, 1)))
cases("adgen.rules.helpers_decomp.quantile_jvp_vjp",
      *[C(randn(), randn(6), _qa, 0.3, None, "linear", False, 0, part) for part in range(3)],
      *[C(randn(2), randn(2), _qm, np.array([0.25, 0.7]), None, "linear", False, 1, part)
        for part in range(3)],
      C(randn(2, 1), randn(2, 3), _qm, 0.45, 1, "linear", True, 0, 1))
cases("adgen.rules.helpers_decomp.quantile_jvp_jvp",
      *[C(randn(6), randn(), _qa, 0.3, None, "linear", False, which, 1) for which in (0, 1)],
      *[C(randn(), randn(2, 3), _qm, 0.45, 1, "linear", False, which, 2)
        for which in (0, 1)],
      C(randn(2, 3), randn(2, 3), _qm, np.array([0.2, 0.7]), 1, "linear", True, 0, 1))

# --------------------------------------------------------------------------------------------
# scipy_linalg.py (the optional extra: registered in tests/conftest.py when scipy is there)

try:
    import scipy.linalg as _scipy_linalg  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    from rules.cases import spd

    _low = np.tril(well_conditioned(4, 4))
    cases("scipy.linalg.solve_triangular", C(_low, randn(4), lower=True),
          C(np.triu(well_conditioned(3, 3)), randn(3, 2)),
          C(_low, randn(4), trans=1, lower=True), C(_low, randn(4), 0, True, True),
          C(well_conditioned(3, 3), randn(3)))          # a full matrix: one triangle read
    cases("scipy.linalg.cholesky", C(spd(4, 4)), C(spd(3, 3), lower=True),
          C(spd(3, 3) + np.triu(randn(3, 3), 1)))          # the other triangle is not read
    cases("scipy.linalg.cho_factor", C(spd(4, 4)), C(spd(3, 3), lower=True))
    cases("scipy.linalg.cho_solve", C((np.linalg.cholesky(spd(4, 4)), True), randn(4)),
          C((np.linalg.cholesky(spd(3, 3)).T, False), randn(3, 2)))
    cases("scipy.linalg.solve", C(well_conditioned(3, 3), randn(3)),
          C(spd(3, 3), randn(3, 2), assume_a="pos"), C(spd(3, 3), randn(3), assume_a="sym",
                                                   lower=True),
          C(well_conditioned(3, 3), randn(3), transposed=True),
          refuse(spd(3, 3), randn(3), assume_a="banded"))

# functools.reduce (rules/folds.py), after the cases above so their draws stay as they were:
# a NumPy function folded over a list of arrays, with and without an initial value
cases("functools.reduce", C(np.add, [randn(3), randn(3), randn(3)]),
      C(np.multiply, [randn(2, 2), randn(2), randn(2, 2)]),
      C(np.matmul, [randn(2, 3), randn(3, 3), randn(3)]), C(np.add, [randn(4)]),
      C(np.multiply, [randn(3), randn(3)], randn(3)))

# (appended: the cases above draw from one generator) np.tile of a vector as rows: the reshaped
# broadcast needs no copy, NumPy's result is a new array all the same
REFERENCE_CASES["numpy.tile"].append(C(randn(3), (3, 1)))

# (appended: the cases above draw from one generator) np.cov with observation weights:
# aweights (differentiated), fweights (counts, constants), both with ddof, two series
REFERENCE_CASES["numpy.cov"] += [
    C(randn(3, 6), aweights=pos(6)),
    C(randn(6, 2), rowvar=False, fweights=np.array([1, 2, 1, 3, 1, 2])),
    C(randn(2, 5), fweights=np.array([2, 1, 1, 1, 3]), aweights=pos(5), ddof=2),
    C(randn(5), randn(5), aweights=pos(5), bias=True)]

# scipy_stats.py (appended; no draws): scipy.stats.norm's methods, loc and scale by position
# and keyword (differentiated), a scale that is not positive (NaN, as scipy)
try:
    import scipy.stats as _scipy_stats  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    _xs = np.array([-1.7, -0.2, 0.4, 2.3])
    _qs = np.array([0.02, 0.3, 0.5, 0.95])
    for _name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        cases(f"scipy.stats.norm.{_name}", C(_xs), C(_xs, 0.3, 1.7), C(0.6, scale=0.8),
              C(_xs, loc=np.array([0.1, -0.2, 0.0, 0.5]), scale=2.0))
    for _name in ("ppf", "isf"):
        cases(f"scipy.stats.norm.{_name}", C(_qs), C(_qs, 0.3, 1.7), C(0.2, loc=-1.0, scale=0.5))

# scipy_stats.py (appended; no draws): scipy.stats.multivariate_normal's logpdf and pdf,
# points (d,) and (n, d), the covariance a matrix, its diagonal, a number; one dimension
try:
    import scipy.stats as _scipy_stats  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    _pts = np.array([[0.3, -0.2], [1.1, 0.4], [-0.5, 0.9]])
    _mu2 = np.array([0.1, -0.3])
    _cov2 = np.array([[1.5, 0.3], [0.3, 0.8]])
    for _name in ("logpdf", "pdf"):
        cases(f"scipy.stats.multivariate_normal.{_name}", C(_pts, _mu2, _cov2),
              C(_pts[0], mean=_mu2, cov=_cov2), C(_pts, _mu2, np.array([0.7, 1.9])),
              C(np.array([-1.7, -0.2, 0.4]), 0.2, 2.0), C(np.array([0.5, 1.0])))

# scipy_stats.py (appended; no draws): scipy.stats.gamma, beta and t's logpdf and pdf, the
# shapes, loc and scale by position and keyword (all differentiated), points in the support
# (outside it the value is -inf: tests/e2e/test_scipy_frozen_distributions.py); scipy_frozen.py: the frozen distributions norm(mu, s), gamma(a, ...), beta(a, b),
# t(df), multivariate_normal(mean, cov), checked through their logpdf and pdf
# (test_references.FROZEN_POINTS); t with df=inf refused
try:
    import scipy.stats as _scipy_stats  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    _pos = np.array([0.3, 1.1, 2.6, 0.05])
    _unit = np.array([0.15, 0.5, 0.85, 0.6])
    for _name in ("logpdf", "pdf"):
        cases(f"scipy.stats.gamma.{_name}", C(_pos, 2.5), C(_pos, 0.7, 0.01, 1.5),
              C(np.array([0.4, 0.8, 3.0]), np.array([1.5, 2.0, 3.5]), scale=2.0),
              C(1.7, a=3.0, loc=-0.5))
        cases(f"scipy.stats.beta.{_name}", C(_unit, 2.0, 3.0), C(_unit, 0.6, 1.4),
              C(np.array([-0.3, 0.4, 1.2]), 2.5, 1.5, -0.5, 2.0), C(0.3, a=1.7, b=0.9))
        cases(f"scipy.stats.t.{_name}", C(_xs, 3.0), C(_xs, 5.5, 0.3, 1.7),
              C(_xs, df=np.array([1.5, 2.0, 4.0, 9.0]), scale=0.8),
              refuse(_xs, np.inf))
    cases("scipy.stats.norm", C(), C(0.3, 1.7), C(loc=-0.4, scale=0.6), C(np.array([0.2, -1.0, 0.5])))
    cases("scipy.stats.gamma", C(2.5), C(0.8, 0.1, 1.5), C(a=3.0, scale=0.5))
    cases("scipy.stats.beta", C(2.0, 3.0), C(0.7, 1.6, loc=-0.1, scale=1.4))
    cases("scipy.stats.t", C(3.0), C(4.5, 0.3, 1.7), C(df=2.5, scale=0.8))
    cases("scipy.stats.multivariate_normal", C(_mu2, _cov2), C(mean=_mu2, cov=np.array([0.7, 1.9])),
          C(cov=_cov2))

# scipy_linalg.py (appended; draws after every case above): scipy.linalg.expm, norms below and
# above the scaling threshold (squarings), a stack
try:
    import scipy.linalg as _scipy_linalg  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    cases("scipy.linalg.expm", C(0.1 * randn(3, 3)), C(randn(4, 4)), C(4.0 * randn(3, 3)),
          C(randn(2, 3, 3)), C(np.array([[0.5]])))

# composites_writes.py (appended; draws after every case above): np.place cycling through its
# values, a mask of another shape and the array's size, a mask of numbers; np.put_along_axis
# along each axis, a negative one, indices broadcast along another axis, a repeated index (the
# last write wins, as NumPy's), axis=None (NumPy's errors: tests/e2e/test_place_and_put_along_axis.py)
cases("numpy.place", C(randn(5), np.array([True, False, True, True, False]), randn(2)),
      C(randn(2, 3), np.array([1, 0, 0, 1, 1, 0]), randn(3)),
      C(randn(4), np.array([False, True, True, False]), randn()),
      C(randn(3, 2), np.zeros((3, 2), dtype=bool), randn(2)))
cases("numpy.put_along_axis", C(randn(3, 4), np.array([[0], [2], [3]]), randn(3, 1), 1),
      C(randn(3, 4), np.array([[1, 0, 2, 2]]), randn(1, 4), 0),
      C(randn(2, 3, 2), np.array([[[1], [0], [2]]]), randn(), -2),
      C(randn(3, 4), np.array([[0, 0], [1, 1], [2, 3]]), randn(3, 2), axis=1),
      C(randn(3, 2), np.array([4, -1]), randn(2), None))

# np.pad's mode="linear_ramp" (session 24; no draws: fixed values), end_values differentiated
# too, an axis padded on one side only
REFERENCE_CASES["numpy.pad"] += [
    C(np.array([0.3, -1.2, 2.0, 0.7]), (3, 2), "linear_ramp", end_values=(1.5, -0.5)),
    C(np.arange(12.0).reshape(3, 4) / 7.0 - 0.5, ((1, 2), (0, 3)), mode="linear_ramp"),
    C(np.array([[0.4, -0.2], [1.1, 0.6]]), 2, "linear_ramp",
      end_values=np.array([[0.5, 1.0], [-1.0, 2.0]])),
    C(np.array([[0.4, -0.2, 0.9], [1.1, 0.6, -0.3]]), ((0, 2), (1, 0)), "linear_ramp",
      end_values=0.25)]

# np.pad's statistic modes (session 27; no draws: fixed values without ties), stat_length as an
# int, per side and per axis, longer than the axis; mode= by position and by keyword
_PADDED = np.array([[0.3, -1.2, 2.0, 0.7], [1.4, 0.2, -0.6, 0.9], [-0.8, 1.7, 0.5, -0.1]])
REFERENCE_CASES["numpy.pad"] += [
    C(_PADDED, ((1, 2), (3, 1)), "mean"), C(_PADDED, 2, mode="mean", stat_length=2),
    C(_PADDED, ((2, 1), (0, 2)), "maximum", stat_length=((1, 2), (2, 1))),
    C(_PADDED, 1, mode="minimum", stat_length=9), C(_PADDED, ((1, 1), (2, 2)), "median"),
    C(_PADDED[0], (2, 3), "median", stat_length=(3, 2)),
    refuse(_PADDED, 1, "maximum", stat_length=0), refuse(_PADDED, 1, "edge", stat_length=2)]

# np.piecewise (session 27; no draws: fixed values away from the conditions' edges) with
# module-level functions, NumPy's and constants in funclist, the "otherwise" function, a
# scalar; a lambda too (refused until session 28's 3fdf51f: rules/composites_callbacks.py)
_PW = np.array([0.3, -1.2, 0.8, -0.4, 1.7])


def _pw_square(t):
    return t * t - 0.5


cases("numpy.piecewise", C(_PW, [_PW < 0, _PW >= 0], [_pw_square, np.sin]),
      C(_PW, [_PW < -1.0, _PW > 0.5], [np.exp, 2.0, _pw_square]),
      C(np.reshape(_PW[:4], (2, 2)), [np.reshape(_PW[:4], (2, 2)) > 0], [np.cos]),
      C(0.7, [True, False], [_pw_square, np.tanh]),
      C(_PW, [_PW < 0], [lambda t: t * 2.0, 1.0]))

# np.apply_along_axis (session 27; no draws): module-level and NumPy's functions returning a
# scalar, a vector, a matrix, along each axis
_AA = np.sin(np.arange(24.0)).reshape(2, 3, 4)


def _aa_norm(r):
    return np.sqrt(np.sum(r * r))


def _aa_outer(r):
    return np.outer(r, r[:2])


cases("numpy.apply_along_axis", C(_aa_norm, 0, _AA), C(np.cumsum, 1, _AA),
      C(_aa_outer, -1, _AA), C(np.sort, 1, _AA[0]), C(_aa_norm, 0, _AA[0, 0]))
