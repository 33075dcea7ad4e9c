"""The registry of cloud providers: one module per provider in `sizing.catalog`.

A provider module (for example `sizing.catalog.aws`, `sizing.catalog.gcp`) defines every
name of `CONTRACT`:

``NAME`` : str
    The ``provider`` value of its catalog rows (lower case).
``TITLE`` : str
    The provider's name for people.
``DEFAULT_REGIONS`` : tuple of str
    Regions compared when the user names none.
``UPSTREAM`` : str
    The public files its build reads.
``ESTIMATES`` : dict of str to (float, str)
    Its model constants that are estimates, with their reasoning.
``build(folder, burst_table=None) -> BuildResult``
    Catalog rows from the folder of its public files (`sizing.catalog.rows`); a build that
    prices egress from the files it read gives its ``egress`` rows too and sets
    ``egress_read`` (else `egress_rows` is asked).
``network_gbps(inst, work) -> (float, str)``
    The bandwidth that caps one instance for one workload [Gbit/s], and why.
``egress_rows(folder) -> list of dict``
    Its rows of ``data/catalog/egress.csv`` (`sizing.catalog.rows.EGRESS_COLUMNS`).
``SPECIAL_FAMILIES`` : dict of str to str
    For each group of `FAMILY_GROUPS` it sells, a regular expression of its family names.

Optional: ``connection_cap(inst, work) -> (float, str)``, the cap the provider's published
connection path puts on requests per second [1/s] (inf for none) and the basis text;
``OPT_IN = True`` keeps its regions out of the default answer (compared only when
named by ``--provider`` or ``--region``); ``FOLDER`` and ``FILES``, the shipped extracts its
`build` reads, and ``regions()``, their regions, make its rows a catalog of their own, built
from them on first use beside the shipped one (`sizing.catalog.load.bundled_catalogs`).

Adding a provider is one new module here plus its data: every module of the package that is
not in `NOT_PROVIDERS` is a provider and is checked against the contract when first loaded.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from operator import attrgetter
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sizing.errors import InputError

if TYPE_CHECKING:
    from sizing.workload.value import Workload


class Instance(Protocol):
    """What the providers' rules read of a catalog row (`sizing.catalog.load.Instance`).

    A protocol, not the class: `sizing.catalog.load` imports this module (its default
    regions), so this module does not import it back.
    """

    @property
    def provider(self) -> str:
        """Provider name (aws, gcp...)."""
        ...

    @property
    def instance_type(self) -> str:
        """Instance type name."""
        ...

    @property
    def family(self) -> str:
        """Instance family."""
        ...

    @property
    def vcpus(self) -> int:
        """Number of vCPUs."""
        ...

    @property
    def network_gbps(self) -> float:
        """Sustained network bandwidth [Gbit/s]."""
        ...

    @property
    def network_burst_gbps(self) -> float | None:
        """The "up to" peak [Gbit/s], or None."""
        ...

    @property
    def key(self) -> tuple[str, str, str]:
        """Provider, region, instance type."""
        ...


#: Modules of `sizing.catalog` that are not providers.
NOT_PROVIDERS = frozenset(
    {
        "beside",
        "build",
        "cache",
        "columns",
        "egress",
        "load",
        "offer",
        "prices",
        "providers",
        "retail",
        "rows",
        "skus",
        "spot",
    }
)
#: Every name a provider module must define.
CONTRACT = (
    "NAME",
    "TITLE",
    "DEFAULT_REGIONS",
    "UPSTREAM",
    "ESTIMATES",
    "build",
    "network_gbps",
    "egress_rows",
    "SPECIAL_FAMILIES",
)
#: Families people do not put in front of web clients, left out unless asked for, and why.
FAMILY_GROUPS = {
    "hpc": "HPC types are sold for tightly coupled MPI jobs (few large sizes, few regions)",
    "gpu": "the price pays for GPUs NGINX does not use",
    "accelerator": "the price pays for FPGAs or ML chips (Inferentia, Trainium) NGINX does not use",
    "metal": "a bare-metal host: the CPUs of the largest virtual size, minutes to boot",
    "one-size": "a single shape of 32+ vCPUs (memory databases, previous generations), not a "
    "size to scale a web tier out with",
}
#: A family with one size of at least this many vCPUs is a one-size special type.
ONE_SIZE_MIN_VCPUS = 32


def missing(module: ModuleType) -> list[str]:
    """The names of `CONTRACT` that ``module`` does not define (or not callable ones)."""
    out = [name for name in CONTRACT if not hasattr(module, name)]
    out += [
        name
        for name in ("build", "network_gbps", "egress_rows")
        if hasattr(module, name) and not callable(getattr(module, name))
    ]
    return out


@cache
def providers() -> dict[str, ModuleType]:
    """Every provider module by its ``NAME``, in name order."""
    import sizing.catalog as package

    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in NOT_PROVIDERS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"sizing.catalog.{info.name}")
        lacking = missing(module)
        if lacking:
            raise TypeError(f"provider module {module.__name__} lacks {', '.join(lacking)}")
        found[module.NAME] = module
    return dict(sorted(found.items()))


def names() -> tuple[str, ...]:
    """The providers' names."""
    return tuple(providers())


def get(name: str) -> ModuleType:
    """The provider module called ``name``, or InputError."""
    try:
        return providers()[name]
    except KeyError:
        raise InputError(f"unknown provider {name!r}; known: {', '.join(providers())}") from None


class _Published:
    """Network rules of a provider without a module (rows from a user's catalog).

    The row's own numbers: its baseline sustained, its burst column the "up to" peak.
    """

    NAME = "other"
    ESTIMATES: ClassVar[dict[str, tuple[float, str]]] = {}

    @staticmethod
    def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
        """The row's baseline [Gbit/s], or its burst peak with ``--network burst``."""
        name = inst.provider.upper()
        if work.burst_network and inst.network_burst_gbps:
            gbps = max(inst.network_burst_gbps, inst.network_gbps)
            return gbps, f"{name} {gbps:g} Gbps 'up to' peak (--network burst)"
        return inst.network_gbps, f"{name} {inst.network_gbps:g} Gbps baseline"


PUBLISHED = _Published()


def provider_of(inst: Instance) -> Any:
    """The provider module of one catalog row; `PUBLISHED` rules for a provider without one."""
    return providers().get(inst.provider, PUBLISHED)


def default_regions(named: Iterable[str] = ()) -> tuple[str, ...]:
    """The default regions of every provider, in provider order.

    A provider whose module sets ``OPT_IN = True`` adds its regions only when ``named``.
    """
    wanted = {n.lower() for n in named}
    return tuple(
        r
        for name, m in providers().items()
        if not getattr(m, "OPT_IN", False) or name in wanted
        for r in m.DEFAULT_REGIONS
    )


def family_group(inst: Instance) -> str:
    """The group of `FAMILY_GROUPS` the instance's family belongs to by name ('' for none)."""
    if ".metal" in inst.instance_type or inst.instance_type.endswith("-metal"):
        return "metal"
    return _special_group(providers().get(inst.provider), inst.family)


@lru_cache(maxsize=4096)
def _special_group(module: ModuleType | None, family: str) -> str:
    """The provider module's special group (``SPECIAL_FAMILIES``) of a family ('' for none).

    Kept per module and name (the last 4,096): a ``--region all`` answer asks it of 2,500
    shapes of some 300 families.
    """
    for group, pattern in getattr(module, "SPECIAL_FAMILIES", {}).items():
        if re.match(pattern, family):
            return str(group)
    return ""


def family_groups(instances: Iterable[Instance]) -> dict[tuple[str, str, str], str]:
    """The group of every instance in a special group, by `Instance.key`.

    One-size: a family of which ``instances`` hold a single size, of at least
    `ONE_SIZE_MIN_VCPUS` vCPUs, in every region they hold it.
    """
    items = list(instances)
    sizes: dict[tuple[str, str], set[str]] = {}
    for i in items:
        sizes.setdefault((i.provider, i.family), set()).add(i.instance_type)
    out = {}
    by_name: dict[tuple[str, str, str], str] = {}  # the group depends on these names alone
    names = attrgetter("provider", "instance_type", "family")
    for i in items:
        name = names(i)
        group = by_name.get(name)
        if group is None:
            group = by_name[name] = family_group(i)
        if not group and len(sizes[i.provider, i.family]) == 1 and i.vcpus >= ONE_SIZE_MIN_VCPUS:
            group = "one-size"
        if group:
            out[i.key] = group
    return out


def estimates() -> dict[str, tuple[float, str]]:
    """Every provider's estimates, by name."""
    return {k: v for m in providers().values() for k, v in m.ESTIMATES.items()}


def network_gbps(inst: Instance, work: Workload) -> tuple[float, str]:
    """The bandwidth that caps ``inst`` for ``work`` [Gbit/s], and why, by its provider."""
    result: tuple[float, str] = provider_of(inst).network_gbps(inst, work)
    return result
