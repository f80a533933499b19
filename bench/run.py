"""Runs the benchmark suite: ``python -m bench.run [--quick] [--write-docs]``.

One process, thread pools pinned to one thread, every system's gradient checked against the
hand gradient before it is timed (a wrong one is reported WRONG and not timed), interleaved
rounds, medians. Prints markdown tables; ``--write-docs`` also writes docs/performance.md.
"""

from __future__ import annotations

import os
import sys

# Thread pools read these when they start: set them before numpy, torch or jax is imported.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_multi_thread_eigen=false"
                           " intra_op_parallelism_threads=1").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["TANGENT_DISK_CACHE"] = "0"  # a cold start must not be served from disk

if __package__ in (None, ""):  # run as a script: python bench/run.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse
import dataclasses
import gc
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import memory, report, systems, timing
from bench.check import RTOL, relative_error
from bench.workloads import Workload, load
from bench.workloads import fill as fill_module

REPO = Path(__file__).resolve().parent.parent
SEED = 0


@dataclass
class Row:
    """One (workload, system, variant) outcome.

    ``status`` is ``ok`` (timed), ``WRONG ...`` (checked and wrong: not timed), ``fails: ...``
    (raised), ``not installed ...`` or ``not run: ...``.
    """

    workload: str
    system: str
    group: str
    variant: str = ""
    rewrite: bool = False
    status: str = "ok"
    error: float | None = None
    median: float | None = None
    best: float | None = None
    first_call: float | None = None
    rounds: int = 0
    batch: int = 0
    peak: int | None = None  # tracemalloc peak of one call, bytes (None: not measured)
    tape: memory.Tape | None = None  # adgen only: what its forward pass keeps
    memory_note: str = ""  # why no peak was measured

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Results:
    """Everything one run measured (what the report formats)."""

    quick: bool
    workloads: list[Workload] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    cold: list[Row] = field(default_factory=list)
    cold_how: dict[str, str] = field(default_factory=dict)
    linearity: list[Row] = field(default_factory=list)
    fresh: dict[str, float] = field(default_factory=dict)  # bench.experiments.cold_start
    missing: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    elapsed: float = 0.0
    load: list[tuple[float, float, float]] = field(default_factory=list)
    clock: str = "cpu"

    def find(self, workload: str, system: str) -> Row | None:
        """The timed row of a system on a workload (its first variant that worked), if any."""
        for row in self.rows:
            if row.workload == workload and row.system == system and row.ok:
                return row
        return None


def _log(message: str) -> None:
    """Progress on stderr (the tables go to stdout)."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _short(exc: BaseException) -> str:
    """The exception's type and its first line of prose (banners like '====' skipped)."""
    lines = [line.strip() for line in str(exc).splitlines()]
    text = next((line for line in lines if len(line.split()) >= 3), lines[0] if lines else "")
    text = text if len(text) <= 110 else text[:107] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _try_variants(system: systems.System, workload: Workload, args: tuple[Any, ...],
                  reference: tuple[Any, ...], now: Any,
                  verbose: bool) -> tuple[list[Row], Any]:
    """Runs a system's variants in order until one gives the right gradient.

    Returns the rows (failures first, then the working one) and the working computation.
    """
    rows: list[Row] = []
    variants = system.variants(workload)
    if not variants:
        if isinstance(system, systems.JaxJit):
            why = (f"not run: jit would unroll {workload.loop_iters} loop iterations "
                   f"(> {system.max_loop}; the XLA compile takes minutes)")
        elif isinstance(system, systems.Jax):
            why = (f"not run: {workload.loop_iters} loop iterations (> {system.max_loop}; "
                   "eager JAX compiles one computation per index)")
        elif isinstance(system, systems.HandLoop):
            why = "not applicable: no loop in the primal"
        else:
            why = "no port of this workload"
        return [Row(workload.name, system.name, system.group, status=why)], None
    for variant in variants:
        row = Row(workload.name, system.name, system.group, variant.label, variant.rewrite)
        rows.append(row)
        try:
            start = now()  # the first call counts the build (tangent, jit)
            prepared = variant.prepare(workload, args)
            out = prepared.call()
            row.first_call = now() - start
            grads = prepared.extract(out)
        except Exception as exc:  # noqa: BLE001 - any failure of a peer is a result
            row.status = f"fails: {_short(exc)}"
            _log(f"{workload.name} {system.name} [{variant.label}]: {row.status}")
            if verbose:
                traceback.print_exc(file=sys.stderr)
            continue
        if system.group != systems.PRIMAL:
            row.error = relative_error(grads, reference)
            if not row.error <= RTOL:
                row.status = f"WRONG (max rel. error {row.error:.1e})"
                _log(f"{workload.name} {system.name} [{variant.label}]: {row.status}")
                continue
        _log(f"{workload.name} {system.name} [{variant.label}]: ok, first call "
             f"{row.first_call * 1e3:.1f} ms")
        return rows, prepared
    return rows, None


def measure_workloads(workloads: list[Workload], chosen: list[systems.System],
                      settings: timing.Settings, results: Results, verbose: bool) -> None:
    """Checks, then times, every system on every workload."""
    for workload in workloads:
        args = workload.make_args(np.random.default_rng(SEED))
        reference = workload.hand(*args)
        entries: list[timing.Entry] = []
        for system in chosen:
            if system.name in results.missing:
                results.rows.append(Row(workload.name, system.name, system.group,
                                        status=results.missing[system.name]))
                continue
            rows, prepared = _try_variants(system, workload, args, reference, settings.now,
                                           verbose)
            results.rows.extend(rows)
            first = rows[-1].first_call
            if prepared is not None and first is not None and first > settings.max_call_s:
                # the first call includes a build (jit); what is left would still take long
                rows[-1].status = (f"not timed: the first call took {first:.1f} s "
                                   f"(> {settings.max_call_s:g} s, the suite's limit)")
                _log(f"{workload.name} {system.name}: {rows[-1].status}")
            elif prepared is not None:
                entries.append(timing.Entry(rows[-1], prepared.call))
        timing.run(entries, settings)
        by_name = {system.name: system for system in chosen}
        gc.collect()
        gc.freeze()  # the collections of the memory measurements skip the peers' caches
        try:
            for entry in entries:
                row: Row = entry.key
                row.median, row.best = entry.median, entry.best
                row.rounds, row.batch = entry.rounds, entry.batch
                measure_memory(row, by_name[row.system], entry.call, workload, args, verbose)
        finally:
            gc.unfreeze()
        _log(f"{workload.name}: timed " + ", ".join(
            f"{e.key.system} {e.median * 1e6:.1f} us" for e in entries))


def measure_memory(row: Row, system: systems.System, call: Any, workload: Workload,
                   args: tuple[Any, ...], verbose: bool) -> None:
    """The peak memory of one (warm) call, and for adgen what its tape keeps."""
    if not system.traces_memory:
        row.memory_note = "not traced (own allocator)"
        return
    row.peak = memory.peak_bytes(call)
    if system.group == systems.ADGEN:
        try:
            row.tape = memory.adgen_tape(workload.primal, args, workload.argnums)
        except Exception as exc:  # noqa: BLE001 - reported, the timing stands
            row.memory_note = f"tape not measured: {_short(exc)}"
            if verbose:
                traceback.print_exc(file=sys.stderr)


def _fresh(workload: Workload) -> Workload:
    """The workload with every function freshly defined (its module re-imported)."""
    import importlib

    module = importlib.reload(workload.module)
    fields = {}
    for name in ("primal", "hand", "hand_loop", "functional", "torch_port",
                 "torch_functional"):
        fn = getattr(workload, name)
        fields[name] = None if fn is None else getattr(module, fn.__name__)
    return dataclasses.replace(workload, module=module, **fields)


#: Systems whose build is re-measured for the cold-start table on a freshly defined function
#: with their cache cleared; for the others the first call of the checking phase is used (it
#: was the first call of that function object: jax.jit traced and compiled it there).
REBUILT_COLD = ("adgen", "tangent")
#: How many cold builds of each workload the table takes the least of.
COLD_BUILDS = 3


def cold_clock(settings: timing.Settings) -> Callable[[], float]:
    """The clock of a rebuilt cold start: under the CPU clock, the CPU time of this thread
    (time.thread_time). A build is single-threaded, and the process's CPU time also counts
    the thread pools the peers' libraries leave running (adi's build swung 90-129 ms between
    runs with it); wall time under the wall clock."""
    return time.thread_time if settings.clock == "cpu" else settings.now


def measure_cold(workloads: list[Workload], chosen: list[systems.System],
                 settings: timing.Settings, results: Results, verbose: bool) -> None:
    """Build + first call of a freshly defined function, for each system that worked.

    The libraries are imported and warmed by the timed phase before, so this is the cost a user
    pays for a new function in a running process, not the import.
    """
    for workload in workloads:
        args = workload.make_args(np.random.default_rng(SEED))
        reference = workload.hand(*args)
        for system in chosen:
            if system.group in (systems.PRIMAL, systems.ANCHOR):
                continue
            timed = results.find(workload.name, system.name)
            if timed is None:
                status = next((r.status for r in results.rows if r.workload == workload.name
                               and r.system == system.name and not r.ok), "not run")
                results.cold.append(Row(workload.name, system.name, system.group,
                                        status=status.split(":")[0]))
                continue
            if system.name not in REBUILT_COLD:
                results.cold.append(dataclasses.replace(timed))
                results.cold_how[system.name] = "first call in the checking phase"
                continue
            row = Row(workload.name, system.name, system.group, timed.variant, timed.rewrite)
            now = cold_clock(settings)
            try:
                # the least of COLD_BUILDS builds, each of a newly defined function with the
                # system's cache cleared: one build timed alone swung by 2x beside the peers'
                # threads (session 14); every build's result is checked
                for _ in range(COLD_BUILDS):
                    fresh = _fresh(workload)
                    variant = next(v for v in system.variants(fresh)
                                   if v.label == timed.variant)
                    results.cold_how[system.name] = system.clear_cache()
                    start = now()
                    prepared = variant.prepare(fresh, args)
                    out = prepared.call()
                    took = now() - start
                    row.first_call = took if row.first_call is None else \
                        min(row.first_call, took)
                    error = relative_error(prepared.extract(out), reference)
                    row.error = error if row.error is None else max(row.error, error)
                if not row.error <= RTOL:
                    row.status = f"WRONG (max rel. error {row.error:.1e})"
            except Exception as exc:  # noqa: BLE001
                row.status = f"fails: {_short(exc)}"
                if verbose:
                    traceback.print_exc(file=sys.stderr)
            results.cold.append(row)
        _fresh(workload)  # leave the module in a consistent state for later phases


def measure_linearity(sizes: tuple[int, ...], chosen: list[systems.System],
                      settings: timing.Settings, results: Results, verbose: bool) -> None:
    """Allocate-then-fill at growing n, for adgen and the anchors."""
    names = {"numpy", "hand", "hand-loop", "adgen"}
    subset = [s for s in chosen if s.name in names]
    before = len(results.rows)
    measure_workloads([fill_module.make(n) for n in sizes], subset, settings, results, verbose)
    results.linearity = results.rows[before:]
    del results.rows[before:]


def run(argv: list[str] | None = None) -> Results:
    """Parses the command line, measures, prints the report; returns the results."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="smoke mode: small sizes, 3 short rounds")
    parser.add_argument("--systems", help="comma-separated subset, e.g. numpy,hand,adgen")
    parser.add_argument("--workloads", help="comma-separated modules, e.g. mse,fill")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-start table")
    parser.add_argument("--jax-max-loop", type=int, default=None,
                        help="run JAX on loops of up to this many iterations (default 30; "
                        "XLA compiles unrolled loops for minutes)")
    parser.add_argument("--no-fresh", action="store_true",
                        help="skip the fresh-process cold start (import, first gradient, CLI)")
    parser.add_argument("--no-linearity", action="store_true",
                        help="skip the allocate-then-fill linearity table")
    parser.add_argument("--write-docs", action="store_true",
                        help="also write docs/performance.md")
    parser.add_argument("--clock", choices=sorted(timing.CLOCKS), default="cpu",
                        help="cpu: process CPU time (default; robust on a shared machine), "
                        "wall: wall time")
    parser.add_argument("--verbose", action="store_true", help="tracebacks of failures")
    options = parser.parse_args(argv)

    started = time.perf_counter()
    results_load = [os.getloadavg()]
    chosen = systems.by_name(options.systems.split(",") if options.systems else None,
                             jax_max_loop=options.jax_max_loop)
    results = Results(quick=options.quick, load=results_load)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # in case numpy was imported before this module (tests)
    except ImportError:
        pass
    for system in chosen:
        why = system.missing()
        if why is None:
            try:
                system.setup()
            except Exception as exc:  # noqa: BLE001
                why = f"fails to set up: {_short(exc)}"
        if why is not None:
            results.missing[system.name] = why
        results.versions.update(system.versions())

    settings = timing.Settings.quick() if options.quick else timing.Settings()
    settings.clock = results.clock = options.clock
    workloads = load(options.workloads.split(",") if options.workloads else None,
                     quick=options.quick)
    results.workloads = workloads
    measure_workloads(workloads, chosen, settings, results, options.verbose)
    if not options.no_cold:
        measure_cold(workloads, chosen, settings, results, options.verbose)
    if not options.no_fresh and any(s.name == "adgen" for s in chosen) \
            and "adgen" not in results.missing:
        from bench.experiments import cold_start

        _log("cold start in fresh processes")
        results.fresh = cold_start.measure(3 if options.quick else 7)
    if not options.no_linearity:
        sizes = (fill_module.LINEARITY_SIZES[:2] if options.quick
                 else fill_module.LINEARITY_SIZES)
        measure_linearity(sizes, chosen, settings, results, options.verbose)
    results.elapsed = time.perf_counter() - started
    results.load.append(os.getloadavg())

    text = report.markdown(results)
    print(text)
    if options.write_docs:
        path = REPO / "docs" / "performance.md"
        kept = report.kept_sections(path.read_text() if path.exists() else "")
        path.write_text(report.document(results, text) + kept)
        print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
