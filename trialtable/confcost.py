"""``conf-cost.json``: what a user's own nginx.conf costs against the reference, in a run folder.

``python -m runners sweep --nginx-conf FILE`` (and ``ab --nginx-conf``) writes it into the run
folder of the user's config (`runners.cli.confsweep`); ``python -m sizing recommend --runs RUN``
reads it (`sizing.evidence.confcost`). The ratio (``method: pairs``) is the median over
interleaved pairs of the user config's nginx CPU time per request over the reference config's,
measured on the same host at the same time, with its seeded bootstrap interval; or
(``method: search``, from ``runners search --nginx-conf``, `runners.cli.confsearch`) the
reference's capacity under the p99 SLA over the user config's, searched one after the other
on the same host, with an interval from both searches' confirmation trials.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from trialtable.errors import RunFolderError
from trialtable.files import read_bounded

CONF_COST_FILE = "conf-cost.json"
KIND = "nginx-conf-cost"
MAX_BYTES = 1024 * 1024
#: How a ratio was measured: interleaved pairs, or two searches under the SLA.
METHODS = ("pairs", "search")
#: The widest ratio taken as a measurement (a config 1,000x the reference is an error).
RATIO_RANGE = (1e-3, 1e3)


@dataclass(frozen=True)
class ConfCost:
    """One run's measured cost ratio.

    Attributes
    ----------
    run_id, reference_run_id : str
        The user config's run and the reference's run (measured in the same pairs).
    ratio, ratio_low, ratio_high : float
        Median CPU time per request, the user's over the reference's [1], and its interval.
    pairs : int
        Pairs measured (``method`` search: confirmation trials of each search).
    scenario, protocol : str
        The reference's scenario and protocol.
    file_bytes : int
        The reference's body size [B].
    nginx_conf : str
        The configuration measured.
    method : str
        ``pairs`` (CPU time per request) or ``search`` (capacity under the SLA).
    """

    run_id: str
    reference_run_id: str
    ratio: float
    ratio_low: float
    ratio_high: float
    pairs: int
    scenario: str
    protocol: str
    file_bytes: int
    nginx_conf: str
    method: str = "pairs"


def _number(d: dict[str, object], key: str, where: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise RunFolderError(f"{where}: {key} is not a number")
    return float(v)


def read_conf_cost(run_dir: str | os.PathLike[str]) -> ConfCost | None:
    """The run folder's cost ratio, or None when it has none.

    Raises
    ------
    RunFolderError
        One line: the file is a link, not JSON, or a value is missing or out of range.
    """
    path = Path(run_dir) / CONF_COST_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        d = json.loads(read_bounded(path, MAX_BYTES, regular_only=True, follow=False))
    except (OSError, ValueError) as exc:
        raise RunFolderError(f"{path}: cannot read ({type(exc).__name__})") from None
    if not isinstance(d, dict) or d.get("kind") != KIND:
        raise RunFolderError(f"{path}: not a {KIND} document")
    ref = d.get("reference")
    if not isinstance(ref, dict):
        raise RunFolderError(f"{path}: reference is missing")
    values = [_number(d, k, str(path)) for k in ("ratio", "ratio_low", "ratio_high", "pairs")]
    lo, hi = RATIO_RANGE
    if not all(lo <= v <= hi for v in values[:3]) or values[3] < 2:
        raise RunFolderError(f"{path}: ratio outside {lo:g}..{hi:g} or fewer than 2 pairs")
    method = d.get("method", "pairs")
    if method not in METHODS:
        raise RunFolderError(f"{path}: method must be one of {', '.join(METHODS)}")
    texts = [d.get("run_id"), d.get("reference_run_id"), ref.get("scenario"), ref.get("protocol")]
    if not all(isinstance(t, str) and t.isprintable() and len(t) < 200 for t in texts):
        raise RunFolderError(f"{path}: run ids, scenario and protocol must be short text")
    return ConfCost(
        str(texts[0]),
        str(texts[1]),
        values[0],
        values[1],
        values[2],
        int(values[3]),
        str(texts[2]),
        str(texts[3]),
        int(_number(ref, "file_bytes", str(path))),
        "".join(ch if ch.isprintable() else "?" for ch in str(d.get("nginx_conf", ""))[:500]),
        str(method),
    )
