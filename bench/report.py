"""Markdown tables and the targets, from a run's results."""

from __future__ import annotations

import datetime
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bench import systems
from bench.workloads import VECTORISED

if TYPE_CHECKING:
    from bench.run import Results, Row

#: adgen's gradient time over the anchor's: hand on vectorised workloads, hand-loop on loops.
LIMIT = {VECTORISED: 1.3, "loop": 1.5}
COLD_LIMIT_S = 0.050
#: issue 15: gradient over primal on vectorised workloads, and on the Polybench-style set
VECTORISED_PRIMAL_LIMIT = 3.0
POLYBENCH = "polybench"
POLYBENCH_GEOMEAN_LIMIT = 4.0
POLYBENCH_MAX_LIMIT = 10.0
#: adgen's peak memory over the anchor's
MEMORY_LIMIT = 1.5
#: fresh-process cold start (key in Results.fresh, label, limit in seconds)
FRESH_LIMITS = (("import adgen", "import adgen, beyond numpy", 0.060),
                ("first gradient", "first gradient of a 5-line function", 0.030),
                ("cli", "`adgen FILE.py` end to end", 0.5))
CLOCK_TEXT = {"cpu": "process CPU time (time.process_time: time spent waiting for a core is "
                     "not counted)", "wall": "wall time (time.perf_counter)"}
#: Linear in n: the time per element at the largest n is at most this times the smallest n's.
LINEAR_SLACK = 1.25


def fmt_time(seconds: float | None) -> str:
    """Three significant digits in a readable unit."""
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return ""


def fmt_bytes(n: int | None) -> str:
    """Bytes in a readable unit (kB = 1000 bytes)."""
    if n is None:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3g}×" if value < 1000 else f"{value:.0f}×"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _ratio(row: Row | None, base: Row | None) -> float | None:
    if row is None or base is None or row.median is None or base.median is None:
        return None
    return row.median / base.median


def _system_names(results: Results) -> list[str]:
    seen: list[str] = []
    for row in results.rows:
        if row.system not in seen:
            seen.append(row.system)
    return seen


def _rows_of(results: Results, workload: str, system: str) -> list[Row]:
    return [r for r in results.rows if r.workload == workload and r.system == system]


def summary_cell(results: Results, workload: str, system: str) -> str:
    """One cell of the overview: the ratio to hand, and whether a rewrite was needed."""
    rows = _rows_of(results, workload, system)
    if not rows:
        return ""
    timed = results.find(workload, system)
    hand = results.find(workload, "hand")
    first = rows[0]
    if timed is None:
        status = first.status
        if status.startswith("not applicable"):
            return "—"
        if status.startswith("WRONG") or any(r.status.startswith("WRONG") for r in rows):
            return "WRONG"
        if status.startswith("not installed"):
            return "not installed"
        if status.startswith(("not run", "no port")):
            return "not run"
        if rows[-1].status.startswith("not timed"):
            return ("needs rewrite; rewrite " if len(rows) > 1 else "") + "too slow to time"
        return "needs rewrite; rewrite fails" if len(rows) > 1 else "fails"
    if timed.system == "numpy":
        return fmt_time(timed.median)
    if timed.system == "hand":
        return fmt_time(timed.median)
    text = fmt_ratio(_ratio(timed, hand))
    if timed.rewrite:
        wrong = any(r.status.startswith("WRONG") for r in rows if r is not timed)
        text = ("WRONG as written; rewrite " if wrong else "needs rewrite; rewrite ") + text
    return text


def overview(results: Results) -> str:
    names = _system_names(results)
    header = ["workload", "kind"] + [
        "numpy primal" if n == "numpy" else ("hand (time)" if n == "hand" else n + " ×hand")
        for n in names]
    body = []
    for w in results.workloads:
        body.append([w.name, w.kind] + [summary_cell(results, w.name, n) for n in names])
    return _table(header, body)


def detail(results: Results) -> str:
    parts = []
    for w in results.workloads:
        primal = results.find(w.name, "numpy")
        hand = results.find(w.name, "hand")
        hand_loop = results.find(w.name, "hand-loop")
        body = []
        for row in [r for r in results.rows if r.workload == w.name]:
            compile_note = ""
            if row.system == "jax-jit" and row.ok and row.first_call and row.median:
                compile_note = f"compile {fmt_time(row.first_call - row.median)}"
            body.append([
                row.system, row.variant, row.status, fmt_time(row.median), fmt_time(row.best),
                fmt_ratio(_ratio(row, primal)), fmt_ratio(_ratio(row, hand)),
                fmt_ratio(_ratio(row, hand_loop)),
                fmt_time(row.first_call) + (f" ({compile_note})" if compile_note else ""),
                f"{row.rounds}×{row.batch}" if row.ok else "",
                fmt_bytes(row.peak) if row.peak is not None else row.memory_note,
            ])
        parts.append(f"### {w.name} — {w.size} ({w.kind})\n\n" + _table(
            ["system", "variant", "status", "median", "best", "×primal", "×hand", "×hand-loop",
             "first call", "rounds×batch", "peak memory"], body))
    return "\n\n".join(parts)


def cold_table(results: Results) -> str:
    names = [n for n in _system_names(results)
             if any(r.system == n for r in results.cold)]
    body = []
    for w in results.workloads:
        line = [w.name]
        for n in names:
            row = next((r for r in results.cold if r.workload == w.name and r.system == n), None)
            if row is None:
                line.append("")
            elif row.status == "ok":
                steady = results.find(w.name, n)
                build = ""
                if steady and steady.median and row.first_call:
                    extra = row.first_call - steady.median
                    # Only where a build happens (compilers, or eager JAX's per-op compiles).
                    if row.group in (systems.ADGEN, systems.COMPILED) or extra > steady.median:
                        build = f" (build {fmt_time(max(extra, 0.0))})"
                line.append(fmt_time(row.first_call) + build + (" rw" if row.rewrite else ""))
            else:
                line.append(row.status)
        body.append(line)
    how = "\n".join(f"- {n}: {results.cold_how[n]}" for n in names if n in results.cold_how)
    clock = ("; timed with the building thread's CPU time, time.thread_time, which the "
             "peers' thread pools do not enter" if results.clock == "cpu" else "")
    note = ("Each cell: build + first call (for adgen and tangent the least of three builds, "
            f"each of a newly defined function with the cache cleared{clock}); in "
            "parentheses, for "
            "systems that build something, that minus the steady-state median (the build "
            "alone); rw: a rewritten version.")
    return (note + "\n\n" + _table(["workload"] + names, body) +
            ("\n\nHow each build was made cold:\n" + how if how else ""))


def memory_table(results: Results) -> str:
    """Peak memory of one gradient call per system, and adgen's tape."""
    names = [n for n in _system_names(results)
             if any(r.system == n and r.peak is not None for r in results.rows)]
    body = []
    for w in results.workloads:
        anchor = results.find(w.name, "hand" if w.kind == VECTORISED else "hand-loop")
        adgen = results.find(w.name, "adgen")
        line = [w.name]
        for n in names:
            row = results.find(w.name, n)
            line.append("" if row is None else fmt_bytes(row.peak) or row.memory_note)
        ratio = (adgen.peak / anchor.peak if adgen is not None and anchor is not None
                 and adgen.peak and anchor.peak else None)
        tape = adgen.tape if adgen is not None else None
        line += [fmt_ratio(ratio), fmt_bytes(tape.held) if tape else
                 (adgen.memory_note if adgen is not None else ""),
                 fmt_bytes(tape.guard_saves) if tape else ""]
        body.append(line)
    untraced = sorted({r.system for r in results.rows
                       if r.memory_note.startswith("not traced")})
    note = ("tracemalloc peak of one warm call above what was allocated before it (the "
            "gradient's arrays included); ×anchor: adgen's peak over the hand gradient's "
            "(vectorised workloads) or the loop-keeping hand adjoint's (loop workloads); "
            "adgen tape: what adgen's forward pass allocates and keeps alive for the pullback "
            "(arrays shared with the arguments not counted); guard copies: the part of it "
            "the mutation guards saved (adgen.explain's bytes saved).")
    if untraced:
        note += (f" Not measured: {', '.join(untraced)} (their allocators are not seen by "
                 "tracemalloc).")
    return note + "\n\n" + _table(["workload"] + names + ["adgen ×anchor", "adgen tape",
                                                           "guard copies"], body)


def _linearity_rows(results: Results, system: str) -> list[tuple[int, float]]:
    points = []
    for row in results.linearity:
        if row.system == system and row.ok and row.median is not None:
            n = int(row.workload.split("-")[1].replace("k", "000"))
            points.append((n, row.median))
    return sorted(points)


def exponent(points: list[tuple[int, float]]) -> float | None:
    """The least-squares slope of log(time) against log(n): 1.0 is linear."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) /
            sum((x - mx) ** 2 for x in xs))


def linearity_table(results: Results) -> str:
    names = [n for n in ("numpy", "hand", "hand-loop", "adgen")
             if any(r.system == n for r in results.linearity)]
    sizes = sorted({int(r.workload.split("-")[1].replace("k", "000")) for r in results.linearity})
    body = []
    for n in sizes:
        line = [str(n)]
        for name in names:
            row = next((r for r in results.linearity if r.system == name
                        and r.workload == f"fill-{n // 1000}k"), None)
            if row is None or not row.ok:
                line.append(row.status if row else "")
            else:
                line.append(f"{fmt_time(row.median)} ({fmt_time(row.median / n)}/elt)")
        body.append(line)
    slopes = ["exponent"]
    for name in names:
        e = exponent(_linearity_rows(results, name))
        slopes.append("" if e is None else f"{e:.2f}")
    body.append(slopes)
    return _table(["n"] + names, body)


def targets(results: Results) -> list[tuple[str, bool, str]]:
    """Each target as (name, met, the numbers)."""
    out: list[tuple[str, bool, str]] = []
    for w in results.workloads:
        anchor_name = "hand" if w.kind == VECTORISED else "hand-loop"
        limit = LIMIT[w.kind]
        adgen = results.find(w.name, "adgen")
        anchor = results.find(w.name, anchor_name)
        name = f"{w.name}: adgen within {limit}× of {anchor_name}"
        ratio = _ratio(adgen, anchor)
        if ratio is None:
            out.append((name, False, "not measured: " + _why(results, w.name, "adgen")))
        else:
            numbers = (f"{fmt_ratio(ratio)} ({fmt_time(adgen.median)} vs "
                       f"{fmt_time(anchor.median)})")
            out.append((name, ratio <= limit, numbers))
    for w in results.workloads:
        adgen = results.find(w.name, "adgen")
        peers = [r for r in results.rows if r.workload == w.name and r.ok
                 and r.group == systems.EAGER]
        name = f"{w.name}: adgen faster than every eager peer"
        if adgen is None:
            out.append((name, False, "not measured: " + _why(results, w.name, "adgen")))
            continue
        if not peers:
            continue  # nothing to compare with (no port, or the peers are not installed)
        fastest = min(peers, key=lambda r: r.median or math.inf)
        assert adgen.median is not None and fastest.median is not None
        slower = [p.system for p in peers if p.median is not None and p.median <= adgen.median]
        out.append((name, not slower,
                    f"adgen {fmt_time(adgen.median)}; fastest eager peer {fastest.system} "
                    f"{fmt_time(fastest.median)} ({fmt_ratio(fastest.median / adgen.median)} "
                    "adgen's time)" + (f"; not faster than {', '.join(slower)}" if slower
                                       else "")))
    for w in results.workloads:
        row = next((r for r in results.cold if r.workload == w.name and r.system == "adgen"),
                   None)
        name = f"{w.name}: adgen cold start under {COLD_LIMIT_S * 1000:.0f} ms"
        if row is None or not row.ok or row.first_call is None:
            out.append((name, False, "not measured: " +
                        (row.status if row else _why(results, w.name, "adgen"))))
        else:
            steady = results.find(w.name, "adgen")
            detail_text = fmt_time(row.first_call)
            if steady is not None and steady.median is not None:
                detail_text += (f" (build {fmt_time(max(row.first_call - steady.median, 0.0))}"
                                f" + a call of {fmt_time(steady.median)})")
            out.append((name, row.first_call < COLD_LIMIT_S, detail_text))
    out += primal_targets(results)
    out += memory_targets(results)
    out += fresh_targets(results)
    points = _linearity_rows(results, "adgen")
    name = f"allocate-then-fill linear in n (time/elt at the largest n ≤ {LINEAR_SLACK}× smallest)"
    if len(points) < 2:
        status = next((r.status for r in results.linearity if r.system == "adgen"),
                      "adgen not run")
        out.append((name, False, "not measured: " + status))
    else:
        (n0, t0), (n1, t1) = points[0], points[-1]
        growth = (t1 / n1) / (t0 / n0)
        numbers = (f"per element {fmt_time(t0 / n0)} at n={n0}, {fmt_time(t1 / n1)} at "
                   f"n={n1} ({growth:.2f}×); exponent {exponent(points):.2f}")
        out.append((name, growth <= LINEAR_SLACK, numbers))
    return out


def _times_primal(results: Results, workload: str) -> float | None:
    return _ratio(results.find(workload, "adgen"), results.find(workload, "numpy"))


def primal_targets(results: Results) -> list[tuple[str, bool, str]]:
    """Gradient over primal: at most 3× on vectorised workloads; on the Polybench-style set
    at most 4× in geometric mean and never above 10×."""
    out: list[tuple[str, bool, str]] = []
    for w in results.workloads:
        if w.kind != VECTORISED:
            continue
        name = f"{w.name}: adgen at most {VECTORISED_PRIMAL_LIMIT:g}× the primal"
        ratio = _times_primal(results, w.name)
        out.append((name, False, "not measured: " + _why(results, w.name, "adgen"))
                   if ratio is None else (name, ratio <= VECTORISED_PRIMAL_LIMIT,
                                          fmt_ratio(ratio)))
    kernels = [w for w in results.workloads if w.tags.get("set") == POLYBENCH]
    if not kernels:
        return out
    ratios = {w.name: _times_primal(results, w.name) for w in kernels}
    missing = [n for n, r in ratios.items() if r is None]
    name = (f"Polybench-style set: adgen at most {POLYBENCH_GEOMEAN_LIMIT:g}× the primal in "
            "geometric mean")
    if missing:
        out.append((name, False, "not measured on " + ", ".join(missing)))
    else:
        geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        out.append((name, geomean <= POLYBENCH_GEOMEAN_LIMIT,
                    f"{fmt_ratio(geomean)} over {len(ratios)} kernels"))
    for n, r in ratios.items():
        if r is not None:
            out.append((f"{n}: adgen at most {POLYBENCH_MAX_LIMIT:g}× the primal",
                        r <= POLYBENCH_MAX_LIMIT, fmt_ratio(r)))
    return out


def memory_targets(results: Results) -> list[tuple[str, bool, str]]:
    """adgen's peak memory within 1.5× of the anchor's (the issue's tape target, measured
    on the whole call: the hand adjoints' tapes are not separable from their temporaries)."""
    out: list[tuple[str, bool, str]] = []
    for w in results.workloads:
        anchor_name = "hand" if w.kind == VECTORISED else "hand-loop"
        adgen, anchor = results.find(w.name, "adgen"), results.find(w.name, anchor_name)
        if adgen is None or anchor is None or not adgen.peak or not anchor.peak:
            continue
        ratio = adgen.peak / anchor.peak
        tape = f"; tape {fmt_bytes(adgen.tape.held)}" if adgen.tape else ""
        out.append((f"{w.name}: adgen's peak memory within {MEMORY_LIMIT:g}× of "
                    f"{anchor_name}'s", ratio <= MEMORY_LIMIT,
                    f"{fmt_ratio(ratio)} ({fmt_bytes(adgen.peak)} vs "
                    f"{fmt_bytes(anchor.peak)}{tape})"))
    return out


def fresh_targets(results: Results) -> list[tuple[str, bool, str]]:
    """Cold start in fresh processes (bench.experiments.cold_start), process CPU time."""
    if not results.fresh:
        return []
    out = []
    for key, label, limit in FRESH_LIMITS:
        value = results.fresh.get(key)
        if value is None:
            continue
        wall = results.fresh.get(key + " wall")
        out.append((f"{label} at most {fmt_time(limit)}", value <= limit,
                    f"{fmt_time(value)} CPU" + (f" ({fmt_time(wall)} wall)" if wall else "")))
    return out


def fresh_table(results: Results) -> str:
    rows = []
    for key, label, limit in FRESH_LIMITS:
        if key in results.fresh:
            rows.append([label, fmt_time(results.fresh[key]),
                         fmt_time(results.fresh.get(key + " wall")), fmt_time(limit)])
    if "import numpy" in results.fresh:
        rows.insert(0, ["import numpy", fmt_time(results.fresh["import numpy"]),
                        fmt_time(results.fresh.get("import numpy wall")), ""])
    return ("`python -m bench.experiments.cold_start`'s measurements, run by the suite: "
            f"medians of {results.fresh.get('runs', 0):.0f} fresh processes (bytecode cached)."
            "\n\n" + _table(["measurement", "CPU", "wall", "target (CPU)"], rows))


def _why(results: Results, workload: str, system: str) -> str:
    rows = _rows_of(results, workload, system)
    if not rows:
        return f"{system} not run"
    return f"{system} {rows[-1].status}"


def targets_text(results: Results) -> str:
    lines = []
    for name, met, numbers in targets(results):
        lines.append(f"- **{'met' if met else 'NOT MET'}** — {name}: {numbers}")
    met = sum(1 for _, ok, _ in targets(results) if ok)
    return f"{met} of {len(lines)} targets met.\n\n" + "\n".join(lines)


LEGEND = """\
Ratios are median gradient times over the hand gradient's (×hand). "needs rewrite" means the
workload as written fails on that system (the reason is in the detail tables) and the time is of
a rewritten version, labelled there; "WRONG" means the gradient disagreed with the hand
gradient (it is not timed); "not installed" means the peer could not be imported here."""


def markdown(results: Results) -> str:
    """The whole report."""
    mode = "quick (smoke) mode: 3 short rounds, small sizes" if results.quick else "full mode"
    missing = "".join(f"\n- {name}: {why}" for name, why in results.missing.items())
    sections = [
        "## Overview\n\n" + f"{mode}; {results.elapsed:.0f} s in all; load average "
        + " -> ".join(f"{a:.2f}" for a, _, _ in results.load)
        + f" on {os.cpu_count()} CPUs (other processes share this machine); clock: "
        + CLOCK_TEXT.get(results.clock, results.clock) + "." +
        (f"\n\nNot available:{missing}" if missing else "") + "\n\n" + LEGEND + "\n\n" +
        overview(results),
        "## Targets\n\n" + targets_text(results),
        "## Cold start (build + first call of a freshly defined function)\n\n" +
        cold_table(results) if results.cold else "",
        "## Memory (peak of one gradient call)\n\n" + memory_table(results),
        "## Cold start in fresh processes\n\n" + fresh_table(results)
        if results.fresh else "",
        "## Allocate-then-fill: linearity in n\n\n" + linearity_table(results)
        if results.linearity else "",
        "## Per workload\n\n" + detail(results),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def machine() -> dict[str, str]:
    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu count": str(os.cpu_count()),
        "python": sys.version.split()[0],
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        info["BLAS"] = "; ".join(
            f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture')}, "
            f"{p.get('num_threads')} thread)" for p in threadpool_info())
    except ImportError:
        pass
    return info


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# Sections after this line in docs/performance.md are measured by other commands (each says
# which) and kept as they are when --write-docs rewrites the report above them.
KEPT_MARKER = "<!-- Measured by the commands each section names; kept by --write-docs. -->"


def kept_sections(old: str) -> str:
    """The part of an existing docs/performance.md from :data:`KEPT_MARKER` on ("" if none)."""
    at = old.find(KEPT_MARKER)
    return "" if at < 0 else "\n" + old[at:]


def document(results: Results, text: str) -> str:
    """docs/performance.md: the report with the date, the machine and every version."""
    versions = dict(results.versions)
    versions.setdefault("numpy", __import__("numpy").__version__)
    env = "\n".join(f"- {k}: {v}" for k, v in machine().items())
    libs = "\n".join(f"- {k}: {v}" for k, v in sorted(versions.items()))
    return f"""# Performance

<!-- Generated by python -m bench.run --write-docs; do not edit by hand. -->

Measured by `python -m bench.run{' --quick' if results.quick else ''} --write-docs` on \
{datetime.date.today().isoformat()}, at commit {_commit()}. One process, thread pools pinned to
one thread, warm-up, interleaved rounds, medians; every gradient checked against the hand
gradient before it was timed. Workloads, peers and method: `bench/` (see `bench/README.md`).

## Machine

{env}

## Versions

{libs}

{text}"""
