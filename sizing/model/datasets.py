"""Reference tables as tidy DataFrames, and the series that the fits run on.

One way to find data: every path is resolved from :data:`sizing.paths.DATA_DIR`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def list_reference() -> list[dict[str, Any]]:
    """Describe every reference dataset: name, file, rows, sources and description."""
    out: list[dict[str, Any]] = []
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


def reference_series(name: str = "nginx-web-server") -> list[dict[str, Any]]:
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
    out: list[dict[str, Any]] = []
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
        path = Path(d)
        df = read_trials(path)
        if len(df) and set(df["run_id"]) != {path.name}:
            raise InputError(
                f"{d}: its trials name run {sorted(set(df['run_id']))}, "
                f"not the folder's {path.name!r}"
            )
        if df["simulated"].any() and not allow_simulated:
            raise InputError(
                f"{d} holds simulated trials; pass --allow-simulated to use them "
                "(they are marked as simulated)"
            )
        df["instance_label"] = df["instance_label"].fillna("")
        frames.append(df)
    if not frames:
        raise InputError("no run folders given")
    return pd.concat(frames, ignore_index=True)


def max_rps_under_sla(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (label, scenario, protocol, size, vCPUs): the highest RPS that met the SLA.

    Where a search confirmed its answer (``kind == "search-confirm"``), the answer is what the
    search reported: the mean of its last batch of confirmation trials that a majority
    passed (every trial of that batch), with their standard deviation; otherwise it is the
    best valid trial that met the SLA. Groups with no passing trial are
    kept with ``max_rps_under_sla`` empty.
    """
    import pandas as pd

    rows = []
    for key, grp in trials.groupby(list(RUN_GROUP), sort=True, dropna=False):
        ok = grp[grp["meets_sla"].astype(bool) & grp["valid"].astype(bool)]
        entry = dict(zip(RUN_GROUP, key, strict=True))
        entry.update(
            {
                "runs": " ".join(sorted(set(grp["run_id"]))),
                "trials": len(grp),
                "simulated": bool(grp["simulated"].any()),
            }
        )
        batch = _confirmed_batch(grp)
        if batch is not None:
            entry.update(
                {
                    "max_rps_under_sla": float(batch["rps"].mean()),
                    "rps_std": float(batch["rps"].std()) if len(batch) > 1 else None,
                    "repeats": len(batch),
                    "basis": "search confirmation mean",
                }
            )
        elif len(ok):
            entry.update(
                {
                    "max_rps_under_sla": float(ok["rps"].max()),
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
        rows.append(entry)
    return pd.DataFrame(rows)


def _confirmed_batch(grp: pd.DataFrame) -> pd.DataFrame | None:
    """The last batch of confirmation trials (same setting) that a majority passed.

    It is the answer a search reports: the mean of the whole batch, passes and fails alike.
    """
    conf = grp[grp["kind"] == "search-confirm"].sort_values(["run_id", "trial_id"])
    if conf.empty:
        return None
    settings = list(
        zip(
            conf["run_id"],
            conf["threads"],
            conf["connections"],
            conf["rate_rps"].fillna(-1.0),
            strict=True,
        )
    )
    chosen = None
    for setting in dict.fromkeys(settings):
        batch = conf[[s == setting for s in settings]]
        passed = batch["meets_sla"].astype(bool) & batch["valid"].astype(bool)
        if majority_passed(int(passed.sum()), len(batch)):
            chosen = batch
    return chosen
