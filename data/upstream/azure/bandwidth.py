"""Rebuild ``bandwidth.csv``: the published network bandwidth of every Azure size page.

Microsoft's size pages (``MicrosoftDocs/azure-compute-docs``, CC BY 4.0,
``articles/virtual-machines/sizes/<family>/<series>-series.md``) each hold a "Network" tab
with a table whose column "Max Network Bandwidth (Mbps)" (spelled "Mb/s" on some pages) gives
one number per size. This script reads every page, parses those tables and keeps the sizes
``sizes.csv`` knows.

Usage::

    python data/upstream/azure/bandwidth.py --repo DIR [--commit SHA]
    python data/upstream/azure/bandwidth.py --pages DIR

``--repo`` is a clone (bare is fine) of ``MicrosoftDocs/azure-compute-docs``; every page is
read at one commit (``--commit``, default ``HEAD``). ``--pages`` is a folder of page files saved
as ``DIR/<commit>/<path in the repository>`` (whole pages or the Network section of them), for
pages read one by one at the commit of each; each row names its page and commit either way.

How cells are read: the value column is found by name ("bandwidth" with a unit of Mbps, Mb/s
or Gbps, the last converted to Mbps; "Max Bandwidth (Mbps)" on the Ddsv5 page); "Up to 12500"
is read as 12500 (the published maximum); thousands separators and footnote marks are dropped;
an old combined column "Max NICs / Expected network bandwidth (Mbps)" is read after its "/".
Not read: a bandwidth column with no unit (the Ev3 table's "Max NICs / Network bandwidth", the
Ebsv5 tables' "Network bandwidth") and a lower bound ("16,000+", Lsv2): such sizes stay
estimated.
A name the catalog does not know but knows without a digit glued after its version
("Standard_D2a_v41", footnote 1 on the Dav4 page) is read without it. A size named on two pages
keeps the first page's value (pages in path order) and the conflict is reported. A column in
megabytes (MB/s, MBps: the storage tables) is never read.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from trialtable.files import write_atomic  # noqa: E402

SIZES_ROOT = "articles/virtual-machines/sizes/"
HEADER = (
    "# Max Network Bandwidth (Mbps) per size, as read from Microsoft's size pages (Microsoft "
    "Learn, 'Sizes for virtual machines in Azure', MicrosoftDocs/azure-compute-docs, CC BY 4.0)"
)
#: "Max Network Bandwidth (Mb/s)", "Max Bandwidth (Mbps)"...: bits, never the storage MB/s.
_BANDWIDTH_COL = re.compile(r"(?i:bandwidth)[^|]*\((Mbps|Mb/s|Gbps|Gb/s)\)")
_SIZE = re.compile(r"Standard_[A-Za-z0-9_-]+")
_MARKUP = re.compile(r"<sup>.*?</sup>|<[^>]+>|\*\*|\[|\]\([^)]*\)")
_FOOTNOTE_DIGIT = re.compile(r"(_v[0-9])[0-9]+$")  # "Standard_D2a_v41": the mark "1" typed in
_NUMBER = re.compile(r"^(?:up\s+to\s+)?([0-9][0-9,]*(?:\.[0-9]+)?)$", re.I)


def _cells(line: str) -> list[str]:
    """The cells of one markdown table row, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _value_mbps(cell: str, header: str) -> float | None:
    """A bandwidth cell in Mbps, or None for a cell that holds no number ("N/A", "-")."""
    text = _MARKUP.sub("", cell).strip()
    if "/" in header and "/" in text:  # "Max NICs / Expected network bandwidth": "2 / 1000"
        text = text.rsplit("/", 1)[1].strip()
    m = _NUMBER.match(text)
    if not m:
        return None
    value = float(m.group(1).replace(",", ""))
    unit = _BANDWIDTH_COL.search(header)
    return value * 1000 if unit and unit.group(1).startswith("G") else value


def network_rows(text: str) -> list[tuple[str, float]]:
    """``(size, Mbps)`` of every table row under a "network bandwidth" column of a page.

    Parameters
    ----------
    text : str
        A size page's markdown (or its Network section).

    Returns
    -------
    list of (str, float)
        Size name and maximum network bandwidth [Mbit/s], in page order.
    """
    out: list[tuple[str, float]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not line.lstrip().startswith("|") or not set(lines[i + 1]) <= set("|-: \t"):
            continue
        head = [_MARKUP.sub("", c) for c in _cells(line)]
        col = next((j for j, h in enumerate(head) if _BANDWIDTH_COL.search(h)), None)
        if col is None or col == 0:
            continue
        for row in lines[i + 2 :]:
            if not row.lstrip().startswith("|"):
                break
            cells = _cells(row)
            mbps = _value_mbps(cells[col], head[col]) if col < len(cells) else None
            if mbps is not None and mbps > 0:
                out.extend((name, mbps) for name in _SIZE.findall(_MARKUP.sub(" ", cells[0])))
    return out


def pages_from_git(repo: Path, commit: str) -> list[tuple[str, str, str]]:
    """``(path, commit, text)`` of every size page of a clone at one commit."""
    full = _git(repo, "rev-parse", commit).strip()
    listing = _git(repo, "ls-tree", "-r", "--name-only", full, SIZES_ROOT).split("\n")
    names = sorted(n for n in listing if n.endswith(".md") and "/includes/" not in n)
    return [(n, full, _git(repo, "show", f"{full}:{n}")) for n in names]


def pages_from_folder(folder: Path) -> list[tuple[str, str, str]]:
    """``(path, commit, text)`` of page files saved as ``folder/<commit>/<path>``."""
    out = []
    for f in sorted(folder.glob("*/**/*.md")):
        commit, path = f.relative_to(folder).parts[0], f.relative_to(folder).parts[1:]
        out.append(("/".join(path), commit, f.read_text(encoding="utf-8")))
    return sorted(out)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def bandwidth_table(
    pages: list[tuple[str, str, str]], known: set[str]
) -> tuple[list[list[str]], list[str]]:
    """The rows of ``bandwidth.csv`` for the sizes in ``known``, and the conflicts seen.

    Parameters
    ----------
    pages : list of (str, str, str)
        Page path, commit and markdown text.
    known : set of str
        The size names the catalog knows (``sizes.csv``).

    Returns
    -------
    rows : list of list of str
        ``[size, max_network_mbps, page, commit (12 hex digits)]``, in page order.
    conflicts : list of str
        One line per size two pages give different values for (the first is kept).
    """
    seen: dict[str, tuple[float, str]] = {}
    rows: list[list[str]] = []
    conflicts: list[str] = []
    for path, commit, text in pages:
        for name, mbps in network_rows(text):
            size = _known_name(name, known)
            if size in seen:
                if seen[size][0] != mbps:
                    conflicts.append(
                        f"{size}: {seen[size][0]:g} ({seen[size][1]}), {mbps:g} ({path})"
                    )
                continue
            seen[size] = (mbps, path)
            if size in known:
                rows.append([size, f"{mbps:g}", path, commit[:12]])
    return rows, conflicts


def _known_name(name: str, known: set[str]) -> str:
    """``name``, or ``name`` less a footnote digit after its version when only that is known."""
    bare = _FOOTNOTE_DIGIT.sub(r"\1", name)
    return bare if name not in known and bare in known else name


def known_sizes(path: Path) -> set[str]:
    """The size names of ``sizes.csv``."""
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if not x.startswith("#")]
    return {row["size"] for row in csv.DictReader(lines)}


def render(rows: list[list[str]]) -> str:
    """The text of ``bandwidth.csv``: the source line, the header, the rows."""
    buf = io.StringIO()
    buf.write(HEADER + "\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["size", "max_network_mbps", "page", "commit"])
    w.writerows(rows)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Write ``bandwidth.csv`` from a clone or a folder of pages (exit status 0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--repo", type=Path, help="a clone of MicrosoftDocs/azure-compute-docs")
    src.add_argument("--pages", type=Path, help="pages saved as DIR/<commit>/<path>")
    ap.add_argument("--commit", default="HEAD", help="the commit to read the clone at")
    args = ap.parse_args(argv)
    pages = pages_from_git(args.repo, args.commit) if args.repo else pages_from_folder(args.pages)
    rows, conflicts = bandwidth_table(pages, known_sizes(HERE / "sizes.csv"))
    for line in conflicts:
        print(f"conflict, first kept: {line}", file=sys.stderr)
    write_atomic(HERE / "bandwidth.csv", render(rows))
    with_table = sum(1 for _, _, text in pages if network_rows(text))
    print(f"{len(pages)} pages, {with_table} with a network table, {len(rows)} known sizes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
