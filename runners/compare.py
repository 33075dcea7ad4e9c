"""Compare two run folders setting by setting, and gate a release on the difference.

``python -m runners compare RUN_A RUN_B [--fail-if-worse 5%] [--html OUT.html]``

Trials are read with `trialtable.read.read_rows` only. Trials of the same setting (workload,
vCPUs, threads, connections, rate) are repeats: a sweep repeats a setting when a value is
listed again (``--connections 8,8,8``). Invalid trials are left out and counted.

Two measures per group of settings (the same workload and vCPUs):

max RPS under the SLA
    Among the group's settings whose repeats meet the SLA by majority, the highest mean RPS.
p99 at equal load
    For each setting of A, B's p99 at A's mean RPS: the same rate for open-loop trials, else
    B's mean p99 interpolated linearly along its mean RPS over the group's settings (only
    inside the range B measured).

Intervals: each mean has a Student-t 95% interval over its repeats; each ratio B/A a
percentile bootstrap 95% interval (`BOOTSTRAP_RESAMPLES` resamples of each side's trials,
with replacement, seeded, so the same folders give the same interval). One trial on a side
gives no interval.

B is worse when a ratio's point value is beyond the threshold: max RPS under the SLA down by
more than it, or p99 at equal load up by more than it (a group where A meets the SLA and B
never does is worse at any threshold). The exit status is 1 then, 0 otherwise, 2 for bad
input, so ``compare`` can gate CI.
"""

from __future__ import annotations

import argparse
import html
import itertools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from runners.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, resampled_means
from runners.names import COMPARE_GATES
from trialtable.errors import RunFolderError
from trialtable.files import read_bounded, write_atomic
from trialtable.pathargs import RUN_STATE_FILES as RUN_FILES
from trialtable.read import read_rows
from trialtable.schema import majority_passed
from trialtable.values import printable

#: The columns that make a group: the same workload on the same vCPUs.
GROUP_COLUMNS = (
    "scenario",
    "protocol",
    "http_version",
    "load_generator",
    "file_bytes",
    "gzip",
    "keepalive",
    "tls_resumption",
    "jwt",
    "upstreams",
    "vcpus",
)
#: The columns that, within a group, make a setting (trials of one setting are repeats).
LOAD_COLUMNS = ("threads", "connections", "streams", "rate_rps")
LEVEL = 0.95
#: Largest run.json read for a run's label [B].
RUN_JSON_MAX_BYTES = 16 * 1024 * 1024


#: A `Stat` as JSON: ``mean``, ``ci_low``, ``ci_high`` (None where not finite) and ``n``.
StatDoc = dict[str, float | int | None]


class RunSide(TypedDict):
    """One run of a comparison: its id, label and invalid trials left out."""

    run: str
    label: str
    invalid_trials: int


class SettingComparison(TypedDict):
    """A's setting against B's at the same load: RPS and p99 [ms], ratios B/A."""

    load: str
    a_rps: StatDoc
    b_rps: StatDoc | None
    rps_ratio: float | None
    rps_ratio_ci: list[float | None]
    a_p99_ms: StatDoc
    b_p99_ms: StatDoc | None
    b_p99_at_a_load_ms: float | None
    p99_ratio_at_equal_load: float | None
    a_meets_sla: bool
    b_meets_sla: bool | None


class GroupComparison(TypedDict):
    """One group of settings: max RPS under the SLA of each run, the ratio, each setting."""

    group: str
    a_max_rps_under_sla: StatDoc | None
    b_max_rps_under_sla: StatDoc | None
    a_max_at: str | None
    b_max_at: str | None
    max_rps_ratio: float | None
    max_rps_ratio_ci: list[float | None]
    settings: list[SettingComparison]
    curves: dict[str, list[tuple[float, float]]]


class Comparison(TypedDict):
    """`compare_runs`'s answer: B against A, group by group, and the verdict."""

    a: RunSide
    b: RunSide
    threshold: float
    gates: list[str]
    interval: str
    only_in_a: list[str]
    only_in_b: list[str]
    groups: list[GroupComparison]
    worse: list[str]
    verdict: str


class CompareError(ValueError):
    """Bad input to a comparison: one line, exit 2."""


@dataclass(frozen=True)
class Stat:
    """A mean over repeated trials with its Student-t interval.

    Attributes
    ----------
    mean : float
        Mean of the values (in their unit: 1/s for RPS, ms for p99).
    low, high : float
        The `LEVEL` t-interval (NaN with one value).
    n : int
        Trials.
    values : tuple of float
        The values themselves (resampled by the bootstrap).
    """

    mean: float
    low: float
    high: float
    n: int
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready (NaN as None)."""
        return {
            "mean": _num(self.mean),
            "ci_low": _num(self.low),
            "ci_high": _num(self.high),
            "n": self.n,
        }


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def t_interval(values: Sequence[float], level: float = LEVEL) -> Stat:
    """The mean of ``values`` and its Student-t interval (NaN bounds for fewer than 2)."""
    n = len(values)
    if n == 0:
        return Stat(math.nan, math.nan, math.nan, 0, ())
    mean = math.fsum(values) / n
    if n < 2:
        return Stat(mean, math.nan, math.nan, 1, tuple(values))
    from scipy import stats  # scipy.stats: a second of imports, for one quantile

    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Stat(mean, mean - half, mean + half, n, tuple(values))


def bootstrap_ratio(
    a: Sequence[float], b: Sequence[float], level: float = LEVEL
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(b) / mean(a)`` (NaN when a side has < 2)."""
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    av, bv = np.asarray(a, float), np.asarray(b, float)
    ma, mb = resampled_means(rng, av), resampled_means(rng, bv)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mb / ma
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size == 0:
        return math.nan, math.nan
    lo, hi = np.quantile(ratio, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


@dataclass
class Setting:
    """One setting's repeats in one run."""

    load: dict[str, object]
    rps: Stat
    p99: Stat
    meets: bool
    trials: int
    invalid: int


@dataclass
class Run:
    """A run folder read for comparison."""

    path: str
    run_id: str
    label: str
    started_at: str
    groups: dict[tuple[object, ...], list[Setting]] = field(default_factory=dict)
    invalid: int = 0
    #: Per group, the settings measured with no valid trial: (load, invalid trials).
    unmeasured: dict[tuple[object, ...], list[tuple[dict[str, object], int]]] = field(
        default_factory=dict
    )


def _key(row: Mapping[str, object], columns: Sequence[str]) -> tuple[object, ...]:
    return tuple(row[c] for c in columns)


def _label(folder: Path) -> str:
    """The run's label: its id, and the extra nginx directives its plan named."""
    try:
        data = read_bounded(
            folder / "run.json", RUN_JSON_MAX_BYTES, regular_only=True, follow=False
        )
        meta = json.loads(data)
        directives = meta.get("plan", {}).get("scenario", {}).get("directives", [])
    except (OSError, ValueError, AttributeError):
        directives = []
    extra = "; ".join(str(d) for d in directives) if isinstance(directives, list) else ""
    return folder.resolve().name + (f" ({extra})" if extra else "")


def load_run(path: str) -> Run:
    """Read one run folder's trials and group them into settings.

    Raises
    ------
    CompareError
        When the folder is not a readable run folder or holds no valid trial.
    """
    try:
        rows = read_rows(path)
    except RunFolderError as exc:
        raise CompareError(str(exc)) from None
    folder = Path(path)
    run = Run(
        str(path),
        folder.resolve().name,
        _label(folder),
        min((r["started_at"] for r in rows), default=""),
    )
    by_setting: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for r in rows:
        by_setting.setdefault(_key(r, GROUP_COLUMNS + LOAD_COLUMNS), []).append(r)
    for key, trials in by_setting.items():
        good = [
            t
            for t in trials
            if t["valid"] and t["rps"] is not None and t["latency_p99_ms"] is not None
        ]
        bad = len(trials) - len(good)
        run.invalid += bad
        group = key[: len(GROUP_COLUMNS)]
        load = dict(zip(LOAD_COLUMNS, key[len(GROUP_COLUMNS) :], strict=True))
        if not good:
            run.unmeasured.setdefault(group, []).append((load, bad))
            continue
        run.groups.setdefault(group, []).append(
            Setting(
                load=load,
                rps=t_interval([float(t["rps"]) for t in good]),
                p99=t_interval([float(t["latency_p99_ms"]) for t in good]),
                meets=majority_passed(sum(bool(t["meets_sla"]) for t in good), len(good)),
                trials=len(good),
                invalid=bad,
            )
        )
    if not run.groups:
        raise CompareError(f"{printable(str(path))} holds no valid trial to compare")
    for settings in run.groups.values():
        settings.sort(key=lambda s: s.rps.mean)
    return run


def max_under_sla(settings: Sequence[Setting]) -> Setting | None:
    """The setting with the highest mean RPS among those meeting the SLA (None: none)."""
    ok = [s for s in settings if s.meets]
    return max(ok, key=lambda s: s.rps.mean) if ok else None


def p99_at(settings: Sequence[Setting], load: Mapping[str, object], rps: float) -> float | None:
    """B's p99 at a load [ms]: the same open-loop rate, else interpolated along mean RPS.

    None outside the range of RPS the settings measured.
    """
    if load.get("rate_rps") is not None:
        same = [s for s in settings if s.load == load]
        return same[0].p99.mean if same else None
    pts = sorted((s.rps.mean, s.p99.mean) for s in settings if s.load.get("rate_rps") is None)
    if not pts or not pts[0][0] <= rps <= pts[-1][0]:
        return None
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= rps <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (rps - x0) / (x1 - x0)
    return pts[0][1]


def _group_name(group: tuple[object, ...]) -> str:
    g = dict(zip(GROUP_COLUMNS, group, strict=True))
    return (
        f"{g['scenario']} {g['protocol']}/{g['http_version']} {g['file_bytes']} B"
        + (" gzip" if g["gzip"] else "")
        + ("" if g["keepalive"] else " new-conn")
        + (" jwt" if g["jwt"] else "")
        + f" {g['load_generator']} {g['vcpus']} vCPU"
    )


def _load_name(load: Mapping[str, object]) -> str:
    if load.get("rate_rps") is not None:
        return f"{load['rate_rps']:g} RPS asked"
    streams = load.get("streams")
    many = isinstance(streams, int | float) and streams > 1
    return f"{load['threads']}t/{load['connections']}c" + (f"/{streams}s" if many else "")


def compare_runs(
    a: Run, b: Run, threshold: float, gates: Sequence[str] = COMPARE_GATES
) -> Comparison:
    """B against A, group by group and setting by setting.

    Parameters
    ----------
    a, b : Run
        The baseline and the candidate.
    threshold : float
        Relative change beyond which B is worse [1], e.g. 0.05.
    gates : sequence of str
        The measures that decide: ``max-rps``, ``p99``.

    Returns
    -------
    dict
        ``groups`` (per group: max RPS under the SLA of each run, the ratio and its
        interval, the settings with p99 at equal load), ``worse`` (one line per finding),
        ``verdict`` (``worse`` or ``pass``).

    Raises
    ------
    CompareError
        When the runs share no group (nothing to compare).
    """
    common = [g for g in a.groups if g in b.groups]
    worse: list[str] = unmeasured_by_b(a, b)
    if not common and not worse:
        raise CompareError(
            f"runs {printable(a.run_id)} and {printable(b.run_id)} share no setting (same "
            "scenario, protocol, size, load generator and vCPUs); nothing to compare"
        )
    groups = [
        _compare_group(_group_name(g), a.groups[g], b.groups[g], (threshold, gates), worse)
        for g in sorted(common, key=_group_name)
    ]
    return {
        "a": {"run": a.run_id, "label": a.label, "invalid_trials": a.invalid},
        "b": {"run": b.run_id, "label": b.label, "invalid_trials": b.invalid},
        "threshold": threshold,
        "gates": list(gates),
        "interval": f"{LEVEL:.0%} Student-t over repeats for each mean; percentile bootstrap "
        f"({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}) for each ratio B/A",
        "only_in_a": [_group_name(g) for g in a.groups if g not in b.groups],
        "only_in_b": [_group_name(g) for g in b.groups if g not in a.groups],
        "groups": groups,
        "worse": worse,
        "verdict": "worse" if worse else "pass",
    }


def _compare_group(
    name: str,
    sa: list[Setting],
    sb: list[Setting],
    rule: tuple[float, Sequence[str]],
    worse: list[str],
) -> GroupComparison:
    """One group of `compare_runs`; its findings (``rule``: threshold, gates) go to ``worse``."""
    threshold, gates = rule
    best_a, best_b = max_under_sla(sa), max_under_sla(sb)
    ratio = lo = hi = math.nan
    if best_a is not None and best_b is not None:
        ratio = best_b.rps.mean / best_a.rps.mean
        lo, hi = bootstrap_ratio(best_a.rps.values, best_b.rps.values)
    if "max-rps" in gates:
        if best_a is not None and best_b is None:
            worse.append(f"{name}: B meets the SLA at no setting; A does at {_best(best_a)}")
        elif best_a is not None and best_b is not None and 1.0 - ratio > threshold:
            worse.append(
                f"{name}: max RPS under the SLA {ratio - 1:+.1%} "
                f"({best_b.rps.mean:,.0f} vs {best_a.rps.mean:,.0f}), beyond -{threshold:.1%}"
            )
    return {
        "group": name,
        "a_max_rps_under_sla": None if best_a is None else best_a.rps.to_dict(),
        "b_max_rps_under_sla": None if best_b is None else best_b.rps.to_dict(),
        "a_max_at": None if best_a is None else _load_name(best_a.load),
        "b_max_at": None if best_b is None else _load_name(best_b.load),
        "max_rps_ratio": _num(ratio),
        "max_rps_ratio_ci": [_num(lo), _num(hi)],
        "settings": [_compare_setting(name, s, sb, rule, worse) for s in sa],
        "curves": {
            "a": [(s.rps.mean, s.p99.mean) for s in sa],
            "b": [(s.rps.mean, s.p99.mean) for s in sb],
        },
    }


def _compare_setting(
    name: str, s: Setting, sb: list[Setting], rule: tuple[float, Sequence[str]], worse: list[str]
) -> SettingComparison:
    """A's setting ``s`` against B's settings of its group ``name`` (p99 at equal load)."""
    threshold, gates = rule
    match = next((t for t in sb if t.load == s.load), None)
    p99_b = p99_at(sb, s.load, s.rps.mean)
    p99_ratio = p99_b / s.p99.mean if p99_b is not None and s.p99.mean > 0 else None
    if "p99" in gates and p99_ratio is not None and p99_ratio - 1.0 > threshold:
        worse.append(
            f"{name} at {s.rps.mean:,.0f} RPS ({_load_name(s.load)}): p99 "
            f"{p99_ratio - 1:+.1%} ({p99_b:.2f} vs {s.p99.mean:.2f} ms), "
            f"beyond +{threshold:.1%}"
        )
    rps_ratio = match.rps.mean / s.rps.mean if match and s.rps.mean > 0 else None
    rlo, rhi = bootstrap_ratio(s.rps.values, match.rps.values) if match else (None, None)
    return {
        "load": _load_name(s.load),
        "a_rps": s.rps.to_dict(),
        "b_rps": match.rps.to_dict() if match else None,
        "rps_ratio": rps_ratio,
        "rps_ratio_ci": [_num(rlo), _num(rhi)],
        "a_p99_ms": s.p99.to_dict(),
        "b_p99_ms": match.p99.to_dict() if match else None,
        "b_p99_at_a_load_ms": p99_b,
        "p99_ratio_at_equal_load": p99_ratio,
        "a_meets_sla": s.meets,
        "b_meets_sla": match.meets if match else None,
    }


def unmeasured_by_b(a: Run, b: Run) -> list[str]:
    """A finding for each setting A measured validly and B only with invalid trials.

    A candidate whose trials of a setting all failed (errors, a crash) did not match the
    baseline there: as a gate, that is a failure of B, never a setting "only in A".
    """
    out = []
    for g, settings in a.groups.items():
        failed = dict((_load_name(load), n) for load, n in b.unmeasured.get(g, []))
        for s in settings:
            n = failed.get(_load_name(s.load))
            if n is not None:
                out.append(
                    f"{_group_name(g)} at {_load_name(s.load)}: B has {n} trial(s), none valid "
                    f"(errors or no latency); A measured {s.rps.mean:,.0f} RPS"
                )
    return out


def _best(s: Setting) -> str:
    return f"{s.rps.mean:,.0f} RPS ({_load_name(s.load)})"


def _ci(stat: Mapping[str, object] | None, fmt: str = ",.0f") -> str:
    if stat is None or stat["mean"] is None:
        return "-"
    if stat["ci_low"] is None:
        return f"{stat['mean']:{fmt}} (n={stat['n']})"
    return f"{stat['mean']:{fmt}} [{stat['ci_low']:{fmt}}, {stat['ci_high']:{fmt}}] (n={stat['n']})"


def _ratio(value: float | None, ci: Sequence[float | None] = (None, None)) -> str:
    if value is None:
        return "-"
    out = f"{value - 1:+.1%}"
    if ci[0] is not None and ci[1] is not None:
        out += f" [{ci[0] - 1:+.1%}, {ci[1] - 1:+.1%}]"
    return out


def render(doc: Comparison) -> str:
    """The comparison as text: per group max RPS under the SLA, per setting p99."""
    out = [
        f"A: {printable(doc['a']['label'])}",
        f"B: {printable(doc['b']['label'])}",
        f"intervals: {doc['interval']}",
        "",
    ]
    for g in doc["groups"]:
        out.append(f"{printable(g['group'])}")
        out.append(
            f"  max RPS under the SLA: A {_ci(g['a_max_rps_under_sla'])}, "
            f"B {_ci(g['b_max_rps_under_sla'])}, "
            f"B/A {_ratio(g['max_rps_ratio'], g['max_rps_ratio_ci'])}"
        )
        for s in g["settings"]:
            out.append(
                f"  {s['load']}: RPS A {_ci(s['a_rps'])} B {_ci(s['b_rps'])} "
                f"B/A {_ratio(s['rps_ratio'], s['rps_ratio_ci'])}; "
                f"p99 A {_ci(s['a_p99_ms'], '.2f')} ms, "
                "B at equal load "
                + (
                    "outside B's measured range"
                    if s["b_p99_at_a_load_ms"] is None
                    else f"{s['b_p99_at_a_load_ms']:.2f} ms "
                    f"({_ratio(s['p99_ratio_at_equal_load'])})"
                )
            )
    for side, run, only in (("a", doc["a"], doc["only_in_a"]), ("b", doc["b"], doc["only_in_b"])):
        if only:
            out.append(f"only in {side.upper()} (not compared): " + printable(", ".join(only)))
        if run["invalid_trials"]:
            out.append(f"{side.upper()}: {run['invalid_trials']} invalid trial(s) left out")
    out.append("")
    if doc["worse"]:
        out.append(f"WORSE: B is worse than A beyond {doc['threshold']:.1%}:")
        out += [f"  - {printable(w)}" for w in doc["worse"]]
    else:
        out.append(
            f"PASS: B is not worse than A beyond {doc['threshold']:.1%} ({', '.join(doc['gates'])})"
        )
    return "\n".join(out)


def html_report(doc: Comparison, history: Sequence[Run] = ()) -> str:
    """A standalone HTML page: both curves (p99 vs RPS), the RPS ratio, and a history.

    Plotly is embedded (offline); every label from a run is HTML-escaped, in the page and in
    the figures' text.
    """
    import plotly.graph_objects as go  # plotly only for --html: most comparisons print text
    from plotly.subplots import make_subplots

    esc = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>runs compared</title></head>"
        "<body style='font-family:sans-serif'>",
        f"<h1>{esc(doc['verdict'].upper())}: B against A</h1>",
        f"<p>A: {esc(doc['a']['label'])}<br>B: {esc(doc['b']['label'])}<br>"
        f"threshold {doc['threshold']:.1%}; {esc(doc['interval'])}</p>",
    ]
    if doc["worse"]:
        parts.append("<ul>" + "".join(f"<li>{esc(w)}</li>" for w in doc["worse"]) + "</ul>")
    include: str | bool = True  # plotly.js embedded once: the page works offline
    for g in doc["groups"]:
        fig = make_subplots(
            rows=1,
            cols=2,
            subplot_titles=("p99 vs throughput", "B/A RPS per setting (95% bootstrap)"),
        )
        for side, colour, run in (("a", "#1f77b4", doc["a"]), ("b", "#d62728", doc["b"])):
            pts = sorted(g["curves"][side])
            fig.add_trace(
                go.Scatter(
                    x=[p[0] for p in pts],
                    y=[p[1] for p in pts],
                    mode="lines+markers",
                    name=esc(f"{side.upper()}: {run['label']}"),
                    line={"color": colour},
                ),
                row=1,
                col=1,
            )
        rows = [
            (s["load"], r, s["rps_ratio_ci"])
            for s in g["settings"]
            if (r := s["rps_ratio"]) is not None
        ]
        fig.add_trace(
            go.Bar(
                x=[esc(load) for load, _, _ in rows],
                y=[r for _, r, _ in rows],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [(ci[1] or r) - r for _, r, ci in rows],
                    "arrayminus": [r - (ci[0] or r) for _, r, ci in rows],
                },
                name="B/A RPS",
                marker={"color": "#7f7f7f"},
            ),
            row=1,
            col=2,
        )
        fig.add_hline(y=1.0, line_color="#444", row=1, col=2)
        fig.add_hline(y=1.0 - doc["threshold"], line_dash="dot", row=1, col=2)
        fig.update_xaxes(title_text="RPS [1/s]", row=1, col=1)
        fig.update_yaxes(title_text="p99 [ms]", row=1, col=1)
        fig.update_yaxes(title_text="B/A", row=1, col=2)
        fig.update_layout(title=esc(g["group"]), height=420)
        parts.append(fig.to_html(full_html=False, include_plotlyjs=include))
        include = False
    if history:
        parts.append(_history_html(history, include))
    parts.append("</body></html>")
    return "\n".join(parts)


def _history_html(runs: Sequence[Run], include: str | bool) -> str:
    """asv-style: max RPS under the SLA of each group across runs, in order of start."""
    import plotly.graph_objects as go

    esc = html.escape
    ordered = sorted(runs, key=lambda r: (r.started_at, r.run_id))
    fig = go.Figure()
    names = sorted({g for r in ordered for g in r.groups}, key=_group_name)
    for g in names:
        xs, ys, lo, hi, labels = [], [], [], [], []
        for r in ordered:
            best = max_under_sla(r.groups.get(g, []))
            if best is None:
                continue
            xs.append(esc(r.run_id))
            labels.append(esc(r.label))
            ys.append(best.rps.mean)
            lo.append(best.rps.mean - best.rps.low if math.isfinite(best.rps.low) else 0.0)
            hi.append(best.rps.high - best.rps.mean if math.isfinite(best.rps.high) else 0.0)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=esc(_group_name(g)),
                text=labels,
                error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
            )
        )
    fig.update_layout(
        title="max RPS under the SLA by run (95% t-interval over repeats)",
        xaxis_title="run",
        yaxis_title="RPS [1/s]",
        height=420,
    )
    return "<h2>History</h2>" + fig.to_html(full_html=False, include_plotlyjs=include)


def main(args: argparse.Namespace) -> int:
    """``python -m runners compare``: 0 pass, 1 worse, 2 bad input."""
    prog = "python -m runners compare"
    try:
        a, b = load_run(args.run_a), load_run(args.run_b)
        doc = compare_runs(a, b, args.fail_if_worse, args.gate)
        history = [load_run(p) for p in args.history]
        if args.html:
            page = html_report(doc, [a, *history, b] if history else [])
            state = [
                Path(r) / n for r in (args.run_a, args.run_b, *args.history) for n in RUN_FILES
            ]
            write_atomic(args.html, page, inputs=state)
    except CompareError as exc:
        print(f"{prog}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: error: {printable(str(args.html))}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(doc, indent=1))
    else:
        print(render(doc))
    return 1 if doc["worse"] else 0
