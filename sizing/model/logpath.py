"""An access log to a container's stdout: the runtime's CPU per line, and the cap it sets.

NGINX in a container that logs to ``/dev/stdout`` (the ``nginx`` image's default, and
ingress-nginx's) writes each line to a pipe; ``containerd-shim-runc-v2`` copies the pipe to a
FIFO and containerd's CRI logger reads it line by line and writes each line, timestamped, to
the pod's log file. Both run on the same machine as NGINX, and each copies one container's
stream in one goroutine. So the log costs NGINX's own write (the ``access_log_container``
row of ``data/reference/feature-costs.csv``), the runtime's CPU per line beside it, and it
caps one container's lines per second at what one CPU can copy, whatever its vCPUs.

``python -m runners features --only access_log_container`` measures the runtime's part on its
host (``data/reference/container-log-path.csv``): the shim's and the logger's CPU per line in
a flood of the CRI path with many lines waiting in the pipe (``flood_batched``: at capacity
NGINX's workers fill the pipe faster than it drains, so each read takes many lines). Carried
to the reference core like a feature (`sizing.model.features.on_reference_core`'s rule), the
logger's time per line sets the cap: ``1e6 x vCPU speed / logger us per line``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from sizing.errors import InputError
from sizing.model.features import KERNEL_SPEED_EXPONENT, Z95, FeatureCost
from sizing.paths import REFERENCE_DIR
from trialtable.fields import FieldError, FieldValue, printable
from trialtable.logpath import CONTAINER_LOG, read_table

#: The measured table.
LOG_PATH_CSV = REFERENCE_DIR / "container-log-path.csv"
#: The path, measurement and processes the model reads (on the CRI path the logger is the
#: daemon, listed as ``reader``; ``containerd`` is the same process and is not added twice).
PATH, MEASUREMENT, SHIM, LOGGER = "cri", "flood_batched", "shim", "reader"


@dataclass(frozen=True)
class LogPath:
    """The runtime's CPU per log line on the measuring host [us], user and kernel apart.

    Attributes
    ----------
    shim_user_us, shim_kernel_us, logger_user_us, logger_kernel_us : float
        Medians over the table's runs of the shim's and the CRI logger's CPU per line.
    logger_sd_us : float
        sd of the logger's CPU per line: the runs' spread (half their range), or a quarter of
        the value when one run is all there is.
    runs : int
        Runs behind the medians.
    source : str
        Where they come from, for the answer's basis.
    """

    shim_user_us: float
    shim_kernel_us: float
    logger_user_us: float
    logger_kernel_us: float
    logger_sd_us: float
    runs: int
    source: str


def _rows(path: Path) -> list[dict[str, FieldValue]]:
    try:
        return read_table(path)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(printable(f"{path}: cannot read the container log path ({why})")) from None
    except FieldError as exc:
        raise InputError(printable(str(exc))) from None


def _median(rows: Sequence[dict[str, FieldValue]], column: str) -> float:
    return statistics.median(float(r[column]) for r in rows)  # type: ignore[arg-type]


def load_log_path(path: str | Path | None = None) -> LogPath | None:
    """The runtime's CPU per line from the table (None when it holds no CRI flood).

    Raises `InputError` (one line naming the file and line) for a table that cannot be read
    or holds a bad value.
    """
    p = Path(path) if path is not None else LOG_PATH_CSV
    rows = [r for r in _rows(p) if (r["container_path"], r["measurement"]) == (PATH, MEASUREMENT)]
    shim = [r for r in rows if r["process"] == SHIM]
    logger = [r for r in rows if r["process"] == LOGGER]
    if not (shim and logger):
        return None
    totals = [float(r["user_us"]) + float(r["kernel_us"]) for r in logger]  # type: ignore[arg-type]
    sd = (max(totals) - min(totals)) / 2 if len(totals) > 1 else statistics.fmean(totals) / 4
    hosts = sorted({str(r["cpu_model"] or "unknown CPU") for r in logger})
    versions = sorted({str(r["containerd_version"] or "") for r in logger} - {""})
    return LogPath(
        shim_user_us=_median(shim, "user_us"),
        shim_kernel_us=_median(shim, "kernel_us"),
        logger_user_us=_median(logger, "user_us"),
        logger_kernel_us=_median(logger, "kernel_us"),
        logger_sd_us=sd,
        runs=len(logger),
        source=f"{p.name} ({len(logger)} run(s) of the CRI path on {', '.join(hosts)}"
        f"{', ' + ', '.join(versions) if versions else ''}, many lines per read)",
    )


@cache
def shipped_log_path() -> LogPath | None:
    """The shipped table's `LogPath` (None when it is not shipped)."""
    return load_log_path() if LOG_PATH_CSV.exists() else None


def with_runtime(cost: FeatureCost, lp: LogPath | None) -> FeatureCost:
    """``access_log_container``'s cost with the runtime's CPU per line added (same machine)."""
    if lp is None or cost.name != CONTAINER_LOG:
        return cost
    return replace(
        cost,
        user_us=cost.user_us + lp.shim_user_us + lp.logger_user_us,
        kernel_us=cost.kernel_us + lp.shim_kernel_us + lp.logger_kernel_us,
        user_sd_us=math.hypot(cost.user_sd_us, lp.logger_sd_us / 2),
        kernel_sd_us=math.hypot(cost.kernel_sd_us, lp.logger_sd_us / 2),
        source=f"{cost.source}, plus the runtime's shim and CRI logger per line from {lp.source}",
    )


def logger_us_on_reference(lp: LogPath, speed_ratio: float) -> tuple[float, float]:
    """The CRI logger's time per line on the reference core [us] and its sd.

    ``speed_ratio`` is reference-core us per host us (`on_reference_core`'s ratio): user work
    scales by it, kernel work by it ** `KERNEL_SPEED_EXPONENT`.
    """
    s = speed_ratio
    us = lp.logger_user_us * s + lp.logger_kernel_us * s ** KERNEL_SPEED_EXPONENT[0]
    exponent_sd = lp.logger_kernel_us * abs(s - 1.0) / (2 * Z95)
    return us, math.hypot(lp.logger_sd_us * s, exponent_sd)


def log_cap(lp: LogPath, speed_ratio: float, vcpu_speed: float, lines: float) -> tuple[float, str]:
    """The cap one container's log path sets [requests/s] and its basis line.

    One goroutine copies the container's stream: at most one vCPU of ``vcpu_speed`` reference
    cores, over the logger's reference-core time per line, over ``lines`` lines per request.
    """
    us, sd = logger_us_on_reference(lp, speed_ratio)
    cap = 1e6 * vcpu_speed / us / lines
    line = (
        f"the container's log path caps it at {cap:,.0f} RPS: containerd's CRI logger copies "
        f"each container's stdout in one goroutine, {us:.2f} us (sd {sd:.2f}) per line on the "
        f"reference core, one vCPU of {vcpu_speed:.2f} reference cores ({lp.source})"
    )
    return cap, line
