"""Sources by title and publisher instead of file names.

The reference tables and factor rows cite the published documents by their seed file name
(``004_2a50d35d485b581a.txt``); a reader wants the title and who published it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PUBLISHED", "Published", "cited", "name_sources", "other_sources"]


@dataclass(frozen=True)
class Published:
    """One published document the model rests on."""

    title: str
    publisher: str
    gives: str

    def cite(self) -> str:
        """``Publisher, "Title"``."""
        return f'{self.publisher}, "{self.title}"'


#: Seed file stem (first 3 characters) -> the document.
PUBLISHED: dict[str, Published] = {
    "000": Published(
        "NGINX on Google Cloud Workload Brief: Tau T2A VMs Powered by Ampere Altra Processors",
        "Ampere Computing",
        "T2A vs N2 vs N2D at 32 vCPUs, max RPS under p99 <= 5 ms, 53 KB over HTTPS",
    ),
    "001": Published(
        "NGINX on Google Cloud Workload Brief (Chinese edition)",
        "Ampere Computing",
        "the same figures as the English brief",
    ),
    "002": Published(
        "Nginx Performance On AWS Graviton3",
        "Arm",
        "reverse proxy and API gateway on C7gn vs C6gn vs C6in, large to 4xlarge",
    ),
    "003": Published(
        "NGINX Proxy Running with Onload Sees a 280% Performance Gain",
        "Solarflare (a Xilinx company)",
        "proxy connections per second and p99 tail latency, kernel vs Onload",
    ),
    "004": Published(
        "Web Server Load Balancing with NGINX Plus: web server sizing tables",
        "NGINX (F5)",
        "RPS, CPS and throughput at 1 to 36 CPUs, Xeon E5-2699 v3, HTTP and HTTPS",
    ),
}

_SEED = re.compile(r"\b(\d{3})_[0-9a-f]{16}\.txt\b")


def name_sources(text: str) -> str:
    """Replace every seed file name in ``text`` with its publisher and title."""

    def sub(m: re.Match[str]) -> str:
        doc = PUBLISHED.get(m.group(1))
        return doc.cite() if doc else m.group(0)

    return _SEED.sub(sub, text)


def cited(text: str) -> list[Published]:
    """The documents ``text`` cites by seed file name or claim id (``002-rp-...``)."""
    keys = set(_SEED.findall(text)) | set(re.findall(r"\b(00\d)-[a-z]", text))
    return [PUBLISHED[k] for k in sorted(keys) if k in PUBLISHED]


_FILE = re.compile(r"\b(data/[\w./-]+\.(?:csv|json|ya?ml|md))\b")
_TITLED = re.compile(r"([A-Z][\w.&-]*(?: [\w.&-]+){0,4}), '([^']{5,160})'")
_SETS = re.compile(r"published cloud measurements \(([^;)]+);")
_OF_SET = re.compile(r"measurement\(s\) of ([a-z0-9][\w-]+)")
_CATALOG = re.compile(r"^catalog [^:]+: (.+)$")


def other_sources(lines: list[str]) -> list[str]:
    """Every other source ``lines`` (a capacity's basis) rests on, once each, in order.

    Publications cited by publisher and title (``Cilium project, 'CNI Benchmark: ...'``),
    named sets of published measurements, the data files that hold them, and the catalog's
    price and specification files; the seed documents are `cited`.
    """
    found: dict[str, None] = {}
    for line in lines:
        for who, title in _TITLED.findall(line):
            found[f"{who}, '{title}'"] = None
        for names in [*_SETS.findall(line), *_OF_SET.findall(line)]:
            found[f"published cloud measurements: {names.strip()}"] = None
        m = _CATALOG.match(line)
        if m:
            found[f"catalog: {m.group(1)}"] = None
        for path in _FILE.findall(line):
            found[path] = None
    return list(found)
