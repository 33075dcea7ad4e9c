"""Imported files into a run folder: one trial row per file, provenance in ``run.json``.

Every file is read and parsed before the run folder is made, so a bad file leaves nothing
behind. Each row is judged as a measured trial is (`runners.trial.trial_row`); what the file
cannot say (the server's vCPUs, a p99) makes the trial invalid with the reason. ``run.json``
records under ``import`` the format, the tool and its version where known, and per file its
name, size, SHA-256 and which columns are exact and which approximated.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from runners.importers import get
from runners.importers.base import Imported, Importer, ImportRefused, refuse
from runners.scenario import make_scenario
from runners.trial import CpuUse, Judging, TrialSetting, invalidate, trial_row
from trialtable.fields import printable
from trialtable.files import MB, read_bounded
from trialtable.folder import RunFolder, new_run_id
from trialtable.jsonvalue import JsonObject
from trialtable.schema import utc_now

#: Largest file imported [B]; larger is refused unread.
MAX_IMPORT_BYTES = 256 * MB
#: What the trial's ``placement`` says of an imported trial.
PLACEMENT = "imported"


@dataclass(frozen=True)
class Setting:
    """What the trials measured, as the user states it (the files do not say).

    Attributes
    ----------
    label : str
        Instance type or free label (``instance_label``).
    vcpus : int or None
        The server's vCPUs; None leaves the trials invalid for sizing.
    scenario, protocol : str
        What the server served, and how.
    file_bytes : int or None
        Response body [B] (None: the scenario's default).
    sla_p99_ms : float
        The p99 each trial had to meet [ms].
    max_error_rate : float
        Errors per response above which a trial is invalid.
    connections : int or None
        Concurrent connections or users, when known.
    tool_version : str
        The tool's version as the user states it, when the file does not say.
    unit : str
        The unit of an HdrHistogram log's values (``us``, ``ns``, ``ms``).
    """

    label: str = ""
    vcpus: int | None = None
    scenario: str = "static"
    protocol: str = "http"
    file_bytes: int | None = None
    sla_p99_ms: float = 5.0
    max_error_rate: float = 0.01
    connections: int | None = None
    tool_version: str = ""
    unit: str = "us"


class FileIdentity(TypedDict):
    """An imported file's name (escaped), size [B] and SHA-256."""

    name: str
    bytes: int
    sha256: str


def read_file(path: str) -> tuple[str, FileIdentity]:
    """A file's text and its identity (name, bytes, SHA-256); `ImportRefused` if unreadable."""
    name = os.path.basename(path) or path
    try:
        data = read_bounded(path, MAX_IMPORT_BYTES)
    except OSError as exc:
        raise refuse(path, f"cannot be read ({exc.strerror or exc})") from None
    if b"\0" in data:
        raise refuse(path, "holds binary data (a NUL byte): not a text result file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(path, f"is not UTF-8 text (byte {exc.start})") from None
    sha = hashlib.sha256(data).hexdigest()
    return text, {"name": printable(name), "bytes": len(data), "sha256": sha}


def import_files(paths: Sequence[str], fmt: str, setting: Setting, out: str) -> Path:
    """Import ``paths`` (one trial each) as format ``fmt`` into a new run in ``out``.

    Returns
    -------
    Path
        The new run folder.

    Raises
    ------
    ImportRefused
        For an unknown format, an unreadable file or one the format's importer refuses.
    """
    importer = get(fmt)
    make_scenario(setting.scenario, setting.file_bytes, protocol=setting.protocol)
    parsed = []
    for path in paths:
        text, identity = read_file(path)
        parsed.append((importer.parse(text, identity["name"], asdict(setting)), identity))
    run_id = new_run_id(f"import-{fmt}")
    sources = []
    meta: dict[str, Any] = {
        "run_id": run_id,
        "created_at": utc_now(),
        "status": "running",
        "simulated": False,
        "plan": {"import": fmt, "setting": asdict(setting)},
    }
    with RunFolder.create(out, meta) as folder:
        for i, (imported, identity) in enumerate(parsed, start=1):
            trial_id = f"{run_id}-{i:04d}"
            row = _row(importer, imported, setting, {"run_id": run_id, "trial_id": trial_id})
            hist = imported.measurement.histogram_us
            folder.append(row, {importer.tool: sorted(hist.items())} if hist else None)
            sources.append({**identity, "trial_id": trial_id, **_provenance(imported)})
        folder.meta["import"] = {
            "format": fmt,
            "tool": importer.tool,
            "tool_version": _version(parsed[0][0], setting),
            "files": sources,
        }
        folder.meta["status"] = "complete"
        folder.save_meta()
        return folder.path


def _version(imported: Imported, setting: Setting) -> str:
    if imported.version:
        return imported.version
    if setting.tool_version:
        return f"{printable(setting.tool_version)[:80]} (as stated with --tool-version)"
    return "unknown (the file does not say)"


def _provenance(imported: Imported) -> JsonObject:
    return {"exact": list(imported.exact), "approximated": dict(imported.approximated)}


def _row(importer: Importer, imported: Imported, setting: Setting, ids: JsonObject) -> JsonObject:
    """One trial row of an imported measurement, judged as `trial_row` judges a trial."""
    m = imported.measurement
    scenario = make_scenario(setting.scenario, setting.file_bytes, protocol=setting.protocol)
    ids = {
        **ids,
        "started_at": imported.started_at,
        "kind": "import",
        "simulated": False,
        "load_generator": importer.tool,
        "clients": 1,
        "instance_label": setting.label,
        "placement": PLACEMENT,
    }
    row = trial_row(
        ids,
        scenario,
        m,
        TrialSetting(setting.vcpus or 0, 0, 0, None, warmup_s=0.0),
        CpuUse(math.nan, math.nan),
        Judging(setting.sla_p99_ms, setting.max_error_rate),
    )
    row.update(vcpus=setting.vcpus, threads=None, connections=imported.connections)
    row["connections"] = row["connections"] or setting.connections
    if not imported.bytes_known:
        row.update(bytes_per_s=None, throughput_gbps=None, bytes_per_response=None)
    reasons = []
    if setting.vcpus is None:
        reasons.append("the server's vCPUs are unknown (give --vcpus)")
    if math.isnan(m.latency_ms.get("p99", math.nan)):
        reasons.append("the file holds no p99")
    invalidate(row, reasons)
    return row


__all__ = ["MAX_IMPORT_BYTES", "ImportRefused", "Setting", "import_files", "read_file"]
