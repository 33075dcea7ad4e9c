"""User-space compute speed per CPU platform, for carrying measured feature costs across CPUs.

A feature's user-space work (Lua, njs, a log line's formatting, a proxy's parsing) is
compute; NGINX's static request, by which platform speeds are fitted, is mostly system calls
and TCP. Platforms differ in the two: a newer core gains more on compute than on the kernel's
network path, or less. So a feature's user-space cost measured on one host is carried to
another platform by the two platforms' single-core compute scores (``data/platforms/
geekbench-single.csv``: Geekbench 6 Single-Core, the median over the servers SpareCores
Inspector measured of each platform; ``data/cloud/extract_geekbench.py`` writes it), not by
their static NGINX speeds. On the reference core's scale (where the model adds costs) that is
the factor `user_factor`: the target's static speed per compute score over the measuring
host's.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache

from sizing.errors import InputError
from sizing.model.platforms import Platform, arch_of_text, platform_by_text
from sizing.paths import DATA_DIR
from trialtable.files import read_bounded

GEEKBENCH_PATH = DATA_DIR / "platforms" / "geekbench-single.csv"
#: The largest table read [B].
MAX_BYTES = 64 * 1024
#: A compute score is not LuaJIT or njs: the spread of the factor it gives.
COMPUTE_REL_SD = (
    0.15,
    "estimate: Geekbench 6's single-core score stands for a feature's user-space work "
    "(Lua, njs, formatting); the platform-to-platform ratio is taken to hold within 15% (1 sd)",
)
#: ``<vendor> family <n> model <n> stepping <n>`` in a host's CPU text (`runners.hosts.facts`).
_CPUID = re.compile(r"\b(\w+) family (\d+) model (\d+) stepping (\d+)\b")
#: ``ARM implementer <0x..> part <0x..>``, the same for an arm64 host.
_ARM_ID = re.compile(r"\bARM implementer (0x[0-9a-fA-F]+) part (0x[0-9a-fA-F]+)\b")


@dataclass(frozen=True)
class Score:
    """One platform's Geekbench 6 single-core score: the median over ``servers``."""

    median: float
    servers: int
    source: str


@cache
def single_core_scores() -> dict[str, Score]:
    """The shipped table, platform id -> `Score` (empty when it is not shipped)."""
    if not GEEKBENCH_PATH.exists():
        return {}
    path = GEEKBENCH_PATH
    try:
        rows = csv.DictReader(io.StringIO(read_bounded(path, MAX_BYTES).decode("utf-8")))
        out = {
            r["platform"]: Score(float(r["gb6_single_median"]), int(r["servers"]), r["source"])
            for r in rows
        }
    except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the compute scores ({exc})") from None
    if any(not s.median > 0 for s in out.values()):
        raise InputError(f"{path}: a score that is not a positive number")
    return out


def host_platform(cpu_text: str) -> Platform:
    """The platform of the host a feature was measured on, from its CPU text.

    The text may end with the host's CPU id as ``runners features`` records it: x86's CPUID
    (``AuthenticAMD family 25 model 1 stepping 1``) or Arm's part (``ARM implementer 0x41
    part 0xd40``), which also says the host is arm64; a cloud VM often names its CPU only
    vaguely. Without either, a text naming arm64 platforms only (``Neoverse-V1``) is arm64.
    """
    if m := _CPUID.search(cpu_text):
        cpuid = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
        return platform_by_text(cpu_text, "x86_64", cpuid)
    if m := _ARM_ID.search(cpu_text):
        return platform_by_text(cpu_text, "arm64", arm_part=(int(m[1], 16), int(m[2], 16)))
    return platform_by_text(cpu_text, arch_of_text(cpu_text))


def user_factor(
    target: tuple[Platform, float], host: tuple[Platform, float]
) -> tuple[float, float, str]:
    """The factor on a host-measured user-space cost on the reference core, its sd, and why.

    Parameters
    ----------
    target, host : (Platform, float)
        Each platform with its static NGINX speed per core [reference cores].

    Returns
    -------
    (factor, rel_sd, why)
        ``(target speed / target score) / (host speed / host score)``; 1, 0 and "" when
        either platform has no score.
    """
    scores = single_core_scores()
    (tp, t_core), (hp, h_core) = target, host
    ts, hs = scores.get(tp.platform_id), scores.get(hp.platform_id)
    if ts is None or hs is None or tp.platform_id == hp.platform_id:
        return 1.0, 0.0, ""
    k = (t_core / ts.median) / (h_core / hs.median)
    why = (
        f"user-space work x{k:.2f} for {tp.name}'s compute against the measuring host's "
        f"{hp.name} (Geekbench 6 single-core {ts.median:g} / {hs.median:g}, medians of "
        f"{ts.servers} and {hs.servers} servers, {ts.source}; static NGINX per core "
        f"{t_core:.2f} / {h_core:.2f} reference cores; {COMPUTE_REL_SD[1]})"
    )
    return k, COMPUTE_REL_SD[0], why
