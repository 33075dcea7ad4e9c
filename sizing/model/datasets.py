"""Reference tables as tidy DataFrames, and the series that the fits run on.

One way to find data: every path is resolved from :data:`sizing.paths.DATA_DIR`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sizing.errors import InputError
from sizing.paths import REFERENCE_DIR
from trialtable.schema import majority_passed

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class DatasetInfo:
    """One reference dataset: its name, file, what it holds and where it comes from."""

    name: str
    filename: str
    description: str


class DatasetListing(TypedDict):
    """`list_reference`'s line of one dataset: its name, file, rows, sources, description."""

    name: str
    file: str
    rows: int
    sources: list[str]
    description: str


class ReferenceSeries(TypedDict):
    """One fit-ready series of a scaling dataset: values ``y`` by CPU count ``x``."""

    metric: str
    protocol: str
    file_size: str
    file_bytes: int
    x: list[float]
    y: list[float]
    source: str


REFERENCE_DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in (
        DatasetInfo(
            "nginx-web-server",
            "nginx-web-server.csv",
            "RPS (0/1/10/100 KB, HTTP and HTTPS), CPS and throughput by CPU count, "
            "bare metal Xeon E5-2699 v3",
        ),
        DatasetInfo(
            "relative-claims",
            "relative-claims.csv",
            "published ratios between instance families, scenarios and software stacks",
        ),
        DatasetInfo(
            "gcp-32vcpu-test-vms",
            "gcp-32vcpu-test-vms.csv",
            "the three 32-vCPU GCP VMs of the T2A/N2/N2D comparison, with hourly prices",
        ),
        DatasetInfo(
            "proxy-tail-latency",
            "proxy-tail-latency.csv",
            "p99 latency at request rate, kernel stack vs Onload kernel bypass",
        ),
    )
}

SERIES_KEYS = ("metric", "protocol", "file_size", "file_bytes")


def _path(name: str) -> Path:
    try:
        info = REFERENCE_DATASETS[name]
    except KeyError:
        known = ", ".join(REFERENCE_DATASETS)
        raise InputError(f"unknown reference dataset {name!r}; expected one of: {known}") from None
    return REFERENCE_DIR / info.filename


def load_reference(name: str) -> pd.DataFrame:
    """Load one reference dataset as a tidy DataFrame.

    Parameters
    ----------
    name : str
        A key of :data:`REFERENCE_DATASETS`, e.g. ``"nginx-web-server"``.

    Returns
    -------
    pandas.DataFrame
        One row per published value, with a ``source`` column naming the seed file and table.
    """
    import pandas as pd

    path = _path(name)
    frame = pd.read_csv(path, keep_default_na=True)
    if "source" not in frame.columns or frame["source"].isna().any():
        raise InputError(f"{path}: every row needs a source")
    return frame


def list_reference() -> list[DatasetListing]:
    """Describe every reference dataset: name, file, rows, sources and description."""
    out: list[DatasetListing] = []
    for info in REFERENCE_DATASETS.values():
        path = REFERENCE_DIR / info.filename
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        sources = sorted({r["source"].split(" ", 1)[0] for r in rows})
        out.append(
            {
                "name": info.name,
                "file": str(path.relative_to(REFERENCE_DIR.parent.parent)),
                "rows": len(rows),
                "sources": sources,
                "description": info.description,
            }
        )
    return out


def reference_series(name: str = "nginx-web-server") -> list[ReferenceSeries]:
    """Split a scaling dataset into fit-ready series.

    Returns
    -------
    list of dict
        One per (metric, protocol, file size): ``metric``, ``protocol``, ``file_size``,
        ``file_bytes``, ``x`` (CPUs), ``y`` (values), ``source``.
    """
    frame = load_reference(name)
    missing = [c for c in (*SERIES_KEYS, "cpus", "value") if c not in frame.columns]
    if missing:
        raise InputError(f"dataset {name!r} is not a scaling table (missing {missing})")
    out: list[ReferenceSeries] = []
    for key, grp in frame.groupby(list(SERIES_KEYS), sort=False):
        grp = grp.sort_values("cpus")
        metric, protocol, file_size, file_bytes = key
        out.append(
            {
                "metric": str(metric),
                "protocol": str(protocol),
                "file_size": str(file_size),
                "file_bytes": int(str(file_bytes)),
                "x": [float(v) for v in grp["cpus"]],
                "y": [float(v) for v in grp["value"]],
                "source": f"{name}: " + "; ".join(sorted(set(grp["source"]))),
            }
        )
    return out


# ----------------------------------------------------------------------------- runs

RUN_GROUP = ("instance_label", "scenario", "protocol", "file_bytes", "vcpus")


def read_trials(run_dir: str | Path) -> pd.DataFrame:
    """One run folder's ``trials.csv`` as a typed DataFrame (`trialtable.read.read_trials`).

    Raises
    ------
    InputError
        One line naming the folder, the file and what is wrong, for a folder that is not a
        run or a damaged ``trials.csv``.
    """
    from trialtable.errors import RunFolderError
    from trialtable.read import read_trials as read

    try:
        return read(run_dir)
    except RunFolderError as exc:
        raise InputError(str(exc)) from None


def _checked_run(d: str | Path, run_ids: set[str], simulated: bool, allow_simulated: bool) -> None:
    """Refuse a folder whose trials name another run, or simulated trials unless allowed."""
    path = Path(d)
    if run_ids and run_ids != {path.name}:
        raise InputError(
            f"{d}: its trials name run {sorted(run_ids)}, not the folder's {path.name!r}"
        )
    if simulated and not allow_simulated:
        raise InputError(
            f"{d} holds simulated trials; pass --allow-simulated to use them "
            "(they are marked as simulated)"
        )


def load_run_rows(
    dirs: list[str] | tuple[str, ...], allow_simulated: bool = False
) -> list[dict[str, Any]]:
    """The trials of run folders as typed rows (`trialtable.read.read_rows`), checked.

    `load_runs` without pandas: the same checks, the same values (an empty
    ``instance_label`` is ``""``, an empty number None).

    Raises
    ------
    InputError
        As `load_runs`.
    """
    from trialtable.errors import RunFolderError
    from trialtable.read import read_rows

    rows: list[dict[str, Any]] = []
    for d in dirs:
        try:
            got = read_rows(d)
        except RunFolderError as exc:
            raise InputError(str(exc)) from None
        _checked_run(
            d, {r["run_id"] for r in got}, any(r["simulated"] for r in got), allow_simulated
        )
        rows.extend(got)
    if not dirs:
        raise InputError("no run folders given")
    return rows


def load_runs(dirs: list[str] | tuple[str, ...], allow_simulated: bool = False) -> pd.DataFrame:
    """The trial tables of run folders, concatenated, with their run ids checked.

    Parameters
    ----------
    dirs : sequence of path
        Run folders (each holds ``trials.csv`` and ``run.json``; its name is its run id).
    allow_simulated : bool
        Accept rows of the simulated server; otherwise they are refused.

    Raises
    ------
    InputError
        A folder that is not a run, a run id that does not match its folder, or simulated
        rows without ``allow_simulated``.
    """
    import pandas as pd

    frames = []
    for d in dirs:
        df = read_trials(Path(d))
        _checked_run(d, set(df["run_id"]), bool(df["simulated"].any()), allow_simulated)
        df["instance_label"] = df["instance_label"].fillna("")
        frames.append(df)
    if not frames:
        raise InputError("no run folders given")
    return pd.concat(frames, ignore_index=True)


def _missing(value: object) -> bool:
    """Whether a cell is empty: None, or NaN (a frame's empty number)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _flag(value: object) -> bool:
    """A flag cell as the frame's ``astype(bool)`` reads it (None is false, NaN true)."""
    return bool(value) if value is not None else False


def _key(values: tuple[object, ...]) -> tuple[tuple[int, object], ...]:
    """Sort key of a group: empty cells last in each column, as ``groupby(dropna=False)``."""
    return tuple((1, 0) if _missing(v) else (0, v) for v in values)


def group_rows(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> list[tuple[tuple[Any, ...], list[Mapping[str, Any]]]]:
    """Rows grouped by ``columns``, groups in sorted order, rows in their order.

    ``DataFrame.groupby(columns, sort=True, dropna=False)`` for rows: empty cells (None or
    NaN) form one group per column, sorted last.
    """
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        key = tuple(None if _missing(row[c]) else row[c] for c in columns)
        groups.setdefault(key, []).append(row)
    return sorted(groups.items(), key=lambda item: _key(item[0]))


def _mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (ddof 1) skipping NaN, as pandas computes them."""
    import numpy as np

    arr = np.asarray([v for v in values if not math.isnan(v)], dtype=np.float64)
    if not arr.size:
        return math.nan, (math.nan if len(values) > 1 else None)
    mean = float(arr.sum(dtype=np.float64) / arr.size)
    if len(values) <= 1:
        return mean, None
    if arr.size <= 1:
        return mean, math.nan
    var = float(((arr.sum(dtype=np.float64) / arr.size - arr) ** 2).sum(dtype=np.float64))
    return mean, math.sqrt(var / (arr.size - 1))


def max_rps_rows(trials: Sequence[Mapping[str, Any]], column: str = "rps") -> list[dict[str, Any]]:
    """Per (label, scenario, protocol, size, vCPUs): the highest rate that met the SLA.

    The rule of `max_rps_under_sla` on typed rows (`load_run_rows`), the rate read from
    ``column`` (``rps``, or ``throughput_gbps`` for a throughput scenario); one dict per group,
    in sorted order, with the group's columns, ``runs``, ``trials``, ``simulated``,
    ``max_rps_under_sla`` (None where no trial met the SLA), ``rps_std``, ``repeats`` and
    ``basis``.
    """
    out = []
    for key, grp in group_rows(trials, RUN_GROUP):
        entry: dict[str, Any] = dict(zip(RUN_GROUP, key, strict=True))
        entry.update(
            {
                "runs": " ".join(sorted({r["run_id"] for r in grp})),
                "trials": len(grp),
                "simulated": any(_flag(r["simulated"]) for r in grp),
            }
        )
        batch = _confirmed_batch(grp)
        ok = [
            float(r[column])
            for r in grp
            if _flag(r["meets_sla"]) and _flag(r["valid"]) and not _missing(r[column])
        ]
        any_ok = any(_flag(r["meets_sla"]) and _flag(r["valid"]) for r in grp)
        if batch is not None:
            mean, std = _mean_std(
                [math.nan if _missing(r[column]) else float(r[column]) for r in batch]
            )
            entry.update(
                {
                    "max_rps_under_sla": mean,
                    "rps_std": std,
                    "repeats": len(batch),
                    "basis": "search confirmation mean",
                }
            )
        elif any_ok:
            entry.update(
                {
                    "max_rps_under_sla": max(ok) if ok else math.nan,
                    "rps_std": None,
                    "repeats": 1,
                    "basis": "best trial meeting the SLA",
                }
            )
        else:
            entry.update(
                {
                    "max_rps_under_sla": None,
                    "rps_std": None,
                    "repeats": 0,
                    "basis": "no trial met the SLA",
                }
            )
        out.append(entry)
    return out


def max_rps_under_sla(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (label, scenario, protocol, size, vCPUs): the highest RPS that met the SLA.

    Where a search confirmed its answer (``kind == "search-confirm"``), the answer is what the
    search reported: the mean of its last batch of confirmation trials that a majority
    passed (every trial of that batch), with their standard deviation; otherwise it is the
    best valid trial that met the SLA. Groups with no passing trial are
    kept with ``max_rps_under_sla`` empty. The frame of `max_rps_rows`.
    """
    import pandas as pd

    records = [{str(k): v for k, v in r.items()} for r in trials.to_dict("records")]
    return pd.DataFrame(max_rps_rows(records))


def _confirmed_batch(grp: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
    """The last batch of confirmation trials (same setting) that a majority passed.

    It is the answer a search reports: the mean of the whole batch, passes and fails alike.
    """
    conf = sorted(
        (r for r in grp if r["kind"] == "search-confirm"),
        key=lambda r: (r["run_id"], r["trial_id"]),
    )
    if not conf:
        return None

    def setting(r: Mapping[str, Any]) -> tuple[Any, ...]:
        rate = -1.0 if _missing(r["rate_rps"]) else r["rate_rps"]
        return (r["run_id"], r["threads"], r["connections"], rate)

    chosen = None
    for wanted in dict.fromkeys(setting(r) for r in conf):
        batch = [r for r in conf if setting(r) == wanted]
        passed = sum(_flag(r["meets_sla"]) and _flag(r["valid"]) for r in batch)
        if majority_passed(int(passed), len(batch)):
            chosen = batch
    return chosen
