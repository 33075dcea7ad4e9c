"""What a configuration reader found: the workload, where each part came from, what it read.

`Reading` is built by `sizing.workload.conf.derive` (an nginx.conf) or
`sizing.workload.conf.ingress` (an ingress-nginx ConfigMap) and shown the same way by
``python -m sizing workload --from-conf`` and ``recommend --nginx-conf``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from sizing.errors import InputError, printable
from sizing.workload.value import MAX_WORKERS, Workload
from trialtable.fields import Field, FieldError
from trialtable.jsonvalue import JsonObject
from trialtable.zlib import GZIP_LEVELS

#: Largest count NGINX (``ngx_atoi``) and the ingress-nginx controller (a Go ``int``) read.
MAX_COUNT = 2**63 - 1


def read_count(text: str, where: str, low: int = 0) -> int:
    """``text`` as the whole number NGINX or the controller reads, or InputError.

    ``keepalive_requests``, ``keep-alive``, ``upstream-keepalive-connections``: a whole
    number from ``low`` to `MAX_COUNT` (NaN, infinity, a fraction or 5,000 digits would not
    load). The message names ``where`` and the value, escaped.
    """
    try:
        value = Field("count", "int", low=low, high=MAX_COUNT).parse(text, where)
    except FieldError:
        shown = printable(text.strip()[:40])
        why = (
            "nginx takes no negative value here"
            if low == 0 and shown.startswith("-")
            else "not a whole number of at most 2**63 - 1 (as nginx reads it)"
        )
        raise InputError(f"{where} is {shown!r}: {why}") from None
    return int(value or 0)


def read_workers(text: str, where: str) -> int:
    """A count of NGINX workers (``worker_processes``, the controller's ``worker-processes``).

    A whole number from 1 to `MAX_WORKERS`, else InputError naming ``where``.
    """
    count = read_count(text, where, low=1)
    if count > MAX_WORKERS:
        raise InputError(f"{where} is {count}: more than {MAX_WORKERS} workers")
    return count


def read_level(text: str, where: str) -> int:
    """A gzip level (``gzip_comp_level``, the controller's ``gzip-level``): 1-9, as zlib's."""
    level = read_count(text, f"{where}: gzip level", low=1)
    if level not in GZIP_LEVELS:
        raise InputError(
            f"{where}: gzip level is {level}: zlib's levels are {GZIP_LEVELS[0]} to "
            f"{GZIP_LEVELS[-1]}"
        )
    return level


@dataclass
class Found:
    """What a reader collects while it reads (mutable; `Reading` is its frozen result).

    Attributes
    ----------
    source : str
        ``your nginx.conf`` or ``your ingress-nginx ConfigMap``.
    values : dict
        Workload fields read (``protocol``, ``tls_key`` ...).
    features : dict of str to float
        Feature -> times per request [1].
    provenance : dict of str to str
        Feature or workload field -> where it was read, ``your nginx.conf (path:line)``.
    settings : dict of str to str
        Directives read and reported but not costed per request (worker_processes ...).
    estimates : list of str
        Values that are estimates, each saying why.
    uncosted : list of str
        Directives that may cost per request and that the model cannot cost, as
        ``name (file:line)``.
    """

    source: str
    values: dict[str, Any] = field(default_factory=dict)
    features: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    estimates: list[str] = field(default_factory=list)
    uncosted: list[str] = field(default_factory=list)

    def at(self, where: str) -> str:
        """``your nginx.conf (where)``, control characters of a file name escaped."""
        return f"{self.source} ({printable(where)})"

    def feature(self, name: str, count: float, where: str) -> None:
        """Add ``count`` runs per request of feature ``name``, read at ``where``."""
        self.features[name] = self.features.get(name, 0.0) + count
        self.provenance.setdefault(name, self.at(where))

    def value(self, name: str, value: object, where: str) -> None:
        """Set the workload field ``name``, read at ``where``."""
        self.values[name] = value
        self.provenance[name] = self.at(where)

    def not_costed(self, name: str, where: str) -> None:
        """A directive that may cost per request and has no cost in the model."""
        entry = printable(f"{name} ({where})")  # shown in tables, CSV and HTML as data
        if entry not in self.uncosted:
            self.uncosted.append(entry)


@dataclass(frozen=True)
class Reading:
    """A configuration read into a workload.

    Attributes
    ----------
    path : str
        The file read first.
    files : tuple of str
        Every file read, in order.
    chosen : str
        What serves the traffic: the server and location (or the ConfigMap).
    workload : Workload
        The derived workload (features and uncosted directives in it).
    found : Found
        Where each value came from, the settings reported and the estimates.
    """

    path: str
    files: tuple[str, ...]
    chosen: str
    workload: Workload
    found: Found

    def to_dict(self) -> JsonObject:
        """JSON-ready: what was read, chosen and derived, with provenance."""
        f = self.found
        return {
            "path": self.path,
            "files": list(self.files),
            "chosen": self.chosen,
            "values": dict(f.values),
            "features": dict(self.workload.features),
            "provenance": dict(f.provenance),
            "settings": dict(f.settings),
            "estimates": list(f.estimates),
            "uncosted": list(self.workload.uncosted),
        }

    def lines(self) -> list[str]:
        """Lines for a person (every quoted value escaped)."""
        f = self.found
        out = [f"read {len(self.files)} file(s) from {self.path}", f"chosen: {self.chosen}"]
        for name, value in f.values.items():
            out.append(f"{name}: {value} from {f.provenance.get(name, f.source)}")
        for name, count in self.workload.features:
            out.append(f"feature {name} x{count:g} per request from {f.provenance.get(name)}")
        if f.settings:
            out.append(
                "read, not costed per request: "
                + "; ".join(f"{k} {v}" for k, v in f.settings.items())
            )
        out += [f"estimate: {e}" for e in f.estimates]
        if self.workload.uncosted:
            out.append("not costed: " + ", ".join(self.workload.uncosted))
        return [printable(line) for line in out]


def answer_notes(reading: Reading, priced: Collection[str]) -> list[str]:
    """The notes a sizing answer shows for a configuration read.

    ``priced`` names the features the model has a measured cost for (the others widen the
    capacity's range, as the directives not costed do).
    """
    w = reading.workload
    out = [f"configuration: {reading.chosen} ({reading.path})"]
    costed = [f"{n} x{c:g}" for n, c in w.features if n in priced]
    unpriced = [f"{n} x{c:g}" for n, c in w.features if n not in priced]
    if costed:
        out.append("features read and priced from their measured costs: " + ", ".join(costed))
    if unpriced:
        out.append("features read with no measured cost (the range widens): " + ", ".join(unpriced))
    if w.uncosted:
        out.append("directives not costed (the range widens): " + ", ".join(w.uncosted))
    if w.workers:
        where = reading.found.provenance.get("workers", reading.found.source)
        out.append(
            f"{w.workers} NGINX worker(s) from {where}: an instance serves on at most "
            f"{w.workers} of its vCPUs ('worker_processes auto;' uses them all)"
        )
    if "metrics" in reading.found.settings:  # an ingress-nginx controller's: which was priced
        out.append(f"ingress-nginx metrics: {reading.found.settings['metrics']}")
    return [printable(line) for line in out]
