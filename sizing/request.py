"""One sizing request: every input of ``size()``, with its flag, notebook name, default and help.

`SizingRequest` is what the command line, the report notebook, the explorer and
``plan-measurements`` all build and hand to `sizing.pipeline.size`. Each field carries, in its
``metadata`` (see `option`), the command-line flag, the notebook parameter's name, the help
text, the parser of text values and the commands that take it. From those:

* `add_arguments` writes the argparse options of a subcommand and `SizingRequest.from_args`
  reads them back;
* `SizingRequest.to_parameters` gives the report notebook one JSON-able value per parameter,
  `SizingRequest.from_parameters` checks and reads them back (text given to ``papermill -p``
  goes through the same parser as the flag), and `parameters_cell` is the notebook's
  ``parameters`` cell, defaults included;
* the explorer starts its widgets at a request's values.

A new input is one new field here; every caller then has it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from sizing.errors import InputError
from sizing.units import (
    DEFAULT_PROTOCOL,
    int_at_least,
    parse_confidence,
    parse_duration_ms,
    parse_fraction,
    parse_rps,
    parse_size,
)
from sizing.vocabulary import CLIENTS as CLIENTS  # re-exported
from sizing.vocabulary import NETWORKS, PRICINGS
from sizing.vocabulary import SORTS as SORTS  # re-exported
from sizing.workload.value import (
    ENVIRONMENTS,
    HTTP_VERSIONS,
    JWT_KINDS,
    PROTOCOLS,
    SCENARIOS,
    TLS_KEYS,
    Workload,
    parse_size_mix,
)
from trialtable.pathargs import INPUT_FILE, RUN_FOLDER, path_arg
from trialtable.tls import DEFAULT_TLS_KEY
from trialtable.values import number_or_percent

if TYPE_CHECKING:
    from sizing.fleet.counts import FleetRules
    from sizing.workload.conf.reading import Reading

_T = TypeVar("_T")

__all__ = [
    "COMMANDS",
    "SizingRequest",
    "add_arguments",
    "option",
    "parameters_cell",
]

#: Subcommands that size a fleet from a request.
SIZING = frozenset({"recommend", "report", "plan-measurements", "compare", "k8s"})
#: Those that also take the fleet rules of zones, pricing and sort.
FLEET = frozenset({"recommend", "report", "compare", "k8s", "plan-measurements"})
#: Those that show a table of options and may solve a mixed fleet.
TABLES = frozenset({"recommend", "report"})
#: The workload's traffic knobs are also ``fit``'s (its cost breakdown).
WORKLOAD = SIZING | {"fit"}
COMMANDS = WORKLOAD


# -- parsers of text values (flags and notebook parameters alike) ---------------------------


def int_between(low: int, high: int) -> Callable[[str], int]:
    """A parser of integers in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} must be {low} to {high}")
        return value

    return parse


def size_or_mix(text: str) -> tuple[int, tuple[tuple[int, float], ...]]:
    """``--file-size``: one size or a mix ``SIZE:SHARE,...`` -> (mean bytes, mix)."""
    try:
        return parse_size_mix(text, parse_size)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def size_mix(text: str) -> tuple[tuple[int, float], ...]:
    """A mix ``SIZE:SHARE,...`` alone (empty text: no mix)."""
    return size_or_mix(text)[1] if text.strip() else ()


def requests_per_connection(text: str) -> float:
    """Requests per connection: a number >= 1, or ``inf``/``unlimited``."""
    if text.strip().lower() in ("inf", "unlimited"):
        return float("inf")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected requests per connection >= 1, or inf"
        ) from None
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: requests per connection must be >= 1")
    return value


def share(text: str) -> float:
    """A fraction in [0, 1]: ``0.8`` or ``80%``."""
    value = number_or_percent(text, "a fraction", "0.8 or 80%")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1]; expected e.g. 0.8")
    return value


def gzip_level(text: str) -> int:
    """A zlib level, 1-9 (``gzip_comp_level``)."""
    from trialtable.zlib import GZIP_LEVELS

    word = text.strip()
    if not (word.isascii() and word.isdigit() and len(word) < 3 and int(word) in GZIP_LEVELS):
        raise argparse.ArgumentTypeError(
            f"{text[:20]!r}: a gzip level is a whole number {GZIP_LEVELS[0]}-{GZIP_LEVELS[-1]}"
        )
    return int(word)


def family_groups(text: str) -> tuple[str, ...]:
    """``hpc,gpu`` -> the family groups (`sizing.catalog.providers.FAMILY_GROUPS`, or all)."""
    from sizing.catalog.providers import FAMILY_GROUPS

    names = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [n for n in names if n not in FAMILY_GROUPS and n != "all"]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown family group {(','.join(bad) or text)[:60]!r}; expected a comma list of "
            f"{', '.join(FAMILY_GROUPS)}, or all"
        )
    return names


def growth_rate(text: str) -> str:
    """``--growth``: a rate with a period (``2x/yr``, ``5%/month``), checked; empty: none."""
    from sizing.fleet.growth import parse_growth

    if not text.strip():
        return ""
    try:
        parse_growth(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def _text(text: str) -> str:
    return text


# -- field metadata --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    """How a request field is asked for on the command line.

    Parameters
    ----------
    flag : str or None
        The command-line flag (None: no flag, e.g. a part another flag sets).
    help : str
        The flag's help text (it names the default).
    parse : callable
        Text -> value, raising ``argparse.ArgumentTypeError`` (flags and text parameters).
    kind : str
        ``value``, ``flag`` (store_true), ``append`` (repeatable) or ``many`` (nargs +).
    choices : iterable of str, optional
        The values the flag accepts.
    metavar : str, optional
        The flag's metavar.
    commands : frozenset of str
        The subcommands that take the flag.
    cli_default : object, optional
        The flag's default when it differs from the request's (``None``: "not given").
    required : bool
        The flag must be given.
    exclusive : str, optional
        Flags with the same name here are mutually exclusive on the command line.
    """

    flag: str | None
    help: str
    parse: Callable[[str], object] = _text
    kind: str = "value"
    choices: Iterable[str] | None = None
    metavar: str | None = None
    commands: frozenset[str] = SIZING
    # dataclasses.MISSING (no value) cannot be a plain default of a dataclass field
    cli_default: object = field(default_factory=lambda: dataclasses.MISSING)
    required: bool = False
    exclusive: str | None = None


def option(
    default: _T,
    cli: Cli,
    *,
    param: str | None = None,
    param_default: object = dataclasses.MISSING,
) -> _T:
    """A request field with its command-line and notebook metadata.

    Parameters
    ----------
    default : object
        The request's default (immutable).
    cli : Cli
        How the command line asks for it.
    param : str, optional
        The report notebook's parameter name (default: the field's name).
    param_default : object, optional
        The default as the notebook's ``parameters`` cell spells it, when text reads better
        (``file_size = "1KB"``).
    """
    meta = {
        "flag": cli.flag,
        "help": cli.help,
        "param": param,
        "parse": cli.parse,
        "kind": cli.kind,
        "choices": tuple(cli.choices) if cli.choices is not None else None,
        "metavar": cli.metavar,
        "commands": cli.commands,
        "cli_default": cli.cli_default,
        "required": cli.required,
        "param_default": param_default,
        "exclusive": cli.exclusive,
    }
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class SizingRequest:
    """Everything a sizing answer depends on: workload, SLA, fleet rules, pricing, evidence.

    Built once, by whichever way of asking; every caller hands it to `sizing.pipeline.size`.

    Each field's metadata (`option`) gives its flag, notebook parameter, parser and help;
    the attribute docs are those help texts (``python -m sizing recommend --help``).
    Construction checks every value and raises `InputError` naming the bad one.
    """

    # The target and the SLA.
    rps: float = option(
        1e6, Cli("--rps", "target requests per second", parse=parse_rps, required=True)
    )
    sla_p99_ms: float = option(
        5.0,
        Cli(
            "--sla-p99",
            "p99 latency SLA with a unit (default 5ms)",
            parse=parse_duration_ms,
            metavar="DURATION",
            commands=WORKLOAD,
        ),
    )
    # The workload.
    protocol: str = option(
        DEFAULT_PROTOCOL,
        Cli(
            "--protocol",
            "protocol clients use (default: %(default)s; the runners measure the same)",
            choices=PROTOCOLS,
            commands=WORKLOAD,
        ),
    )
    file_bytes: int = option(
        1024,
        Cli(
            "--file-size",
            "response body size, e.g. 0, 1KB, 53KB, 1MB (default 1KB), or a mix of sizes "
            "with their shares of requests, e.g. 1KB:0.7,50KB:0.3",
            parse=size_or_mix,
            metavar="SIZE",
            commands=WORKLOAD,
        ),
        param="file_size",
        param_default="1KB",
    )
    size_mix: tuple[tuple[int, float], ...] = option(
        (),
        Cli(None, "response sizes [B] with their shares (set by --file-size)", parse=size_mix),
        param_default="",
    )
    scenario: str = option(
        "static",
        Cli(
            "--scenario",
            "what NGINX does per request (default static)",
            choices=SCENARIOS,
            commands=WORKLOAD,
        ),
    )
    requests_per_connection: float = option(
        math.inf,
        Cli(
            "--requests-per-connection",
            "requests per connection (keep-alive reuse); 1 = a new connection for every "
            "request; default inf (connections stay open)",
            parse=requests_per_connection,
            metavar="N",
            commands=WORKLOAD,
        ),
    )
    tls_resumption: float = option(
        0.0,
        Cli(
            "--tls-resumption",
            "share of new TLS connections that resume a session (default 0)",
            parse=share,
            metavar="FRACTION",
            commands=WORKLOAD,
        ),
    )
    tls_key: str = option(
        DEFAULT_TLS_KEY,
        Cli(
            "--tls-key",
            f"server key of full TLS handshakes (default {DEFAULT_TLS_KEY})",
            choices=TLS_KEYS,
            commands=WORKLOAD,
        ),
    )
    gzip: float = option(
        0.0,
        Cli(
            "--gzip",
            "share of the response bytes NGINX gzip-compresses on the fly (default 0)",
            parse=share,
            metavar="FRACTION",
            commands=WORKLOAD,
        ),
    )
    gzip_level: int = option(
        1,
        Cli(
            "--gzip-level",
            "zlib level of that compression, 1-9 (gzip_comp_level; default 1, NGINX's)",
            parse=gzip_level,
            metavar="N",
            commands=WORKLOAD,
        ),
    )
    http_version: str = option(
        "1.1",
        Cli(
            "--http-version",
            "HTTP version clients speak (2: HTTP/2 streams on each connection; default 1.1)",
            choices=HTTP_VERSIONS,
            commands=WORKLOAD,
        ),
    )
    network: str = option(
        "baseline",
        Cli(
            "--network",
            "size against sustained bandwidth (baseline, the default) or the 'up to' peaks "
            "(burst), AWS and GCP alike",
            choices=NETWORKS,
            commands=WORKLOAD,
        ),
    )
    internet_facing: bool = option(
        False,
        Cli(
            "--internet-facing",
            "traffic passes AWS's internet gateway: 5 Gbps under 32 vCPUs",
            parse=_bool,
            kind="flag",
            commands=WORKLOAD,
        ),
    )
    environment: str = option(
        "vm",
        Cli(
            "--environment",
            "where NGINX runs: on the host's own kernel, in a VM behind a virtual NIC "
            "(vm, the default), or in a pod behind a Kubernetes Service",
            choices=ENVIRONMENTS,
            commands=WORKLOAD,
        ),
    )
    jwt: str = option(
        "none",
        Cli(
            "--jwt",
            "JWT signature checked per request (reverse_proxy and api_gateway scenarios)",
            choices=JWT_KINDS,
            commands=WORKLOAD,
        ),
    )
    nginx_conf: str = option(
        "",
        Cli(
            "--nginx-conf",
            "your nginx.conf (its includes read too, nothing run): the workload and the "
            "per-request features of the server and location that serve the traffic, unless a "
            "flag is set to something else (default none)",
            parse=path_arg(INPUT_FILE),
            metavar="FILE",
            commands=WORKLOAD,
            exclusive="conf",
            cli_default=None,
        ),
    )
    ingress_nginx: str = option(
        "",
        Cli(
            "--ingress-nginx",
            "your ingress-nginx ConfigMap (YAML), or the Helm chart's values (controller.config, "
            "controller.metrics.enabled): the controller's workload and per-request Lua "
            "phases, unless a flag is set to something else (default none)",
            parse=path_arg(INPUT_FILE),
            metavar="CONFIGMAP",
            commands=WORKLOAD,
            exclusive="conf",
            cli_default=None,
        ),
    )
    conf_server: str = option(
        "",
        Cli(
            "--server",
            "with --nginx-conf: the server_name that serves the traffic (default: the first "
            "server with a listen)",
            metavar="NAME",
            commands=WORKLOAD,
        ),
    )
    conf_location: str = option(
        "",
        Cli(
            "--location",
            "with --nginx-conf: the location that serves the traffic, as written (default /)",
            metavar="LOCATION",
            commands=WORKLOAD,
        ),
    )
    # Fleet rules.
    headroom: float = option(
        0.2,
        Cli(
            "--headroom",
            "spare fraction of each instance's SLA capacity (default 0.2)",
            parse=parse_fraction,
        ),
    )
    redundancy: int = option(
        0,
        Cli(
            "--redundancy",
            "instances that may fail while the rest meet the target, N+k (default 0)",
            parse=int_at_least(0),
        ),
    )
    zones: int = option(
        1,
        Cli(
            "--zones",
            "spread the fleet evenly over Z zones, at least one instance each (default 1)",
            parse=int_between(1, 64),
            metavar="Z",
            commands=FLEET,
        ),
    )
    zone_loss: int = option(
        0,
        Cli(
            "--zone-loss",
            "keep the target with the headroom after losing N whole zones (default 0)",
            parse=int_between(0, 63),
            metavar="N",
            commands=FLEET,
        ),
    )
    max_count: int | None = option(
        None,
        Cli(
            "--max-count",
            "largest fleet to consider per instance type (default: no limit)",
            parse=int_at_least(1),
            commands=SIZING,
        ),
    )
    mix: int = option(
        1,
        Cli(
            "--mix",
            "also find the cheapest fleet of up to K instance types per zone (integer program)"
            " (default 1)",
            parse=int_between(1, 8),
            metavar="K",
            commands=TABLES,
        ),
    )
    burstable: bool = option(
        False,
        Cli(
            "--burstable",
            "also consider shared-core and credit-based types (t3, e2-micro...)",
            parse=_bool,
            kind="flag",
            commands=FLEET,
        ),
    )
    growth: str = option(
        "",
        Cli(
            "--growth",
            "traffic growth, e.g. 2x/yr or 5%%/month: say in which month each fleet must grow",
            parse=growth_rate,
            metavar="RATE",
            cli_default=None,
        ),
    )
    # Where clients are, and which families are in.
    clients: str = option(
        "internet",
        Cli(
            "--clients",
            "where clients are: internet (data transfer out priced in the region's tiers; "
            "default) or vpc (same VPC: with --zones Z > 1 an estimated (Z-1)/Z of responses "
            "pay the inter-zone price)",
            choices=CLIENTS,
        ),
    )
    include_families: tuple[str, ...] = option(
        (),
        Cli(
            "--include-families",
            "bring back family groups that are otherwise left out: a comma list of hpc, gpu, "
            "accelerator, metal, one-size (default none)",
            parse=family_groups,
            metavar="GROUPS",
            exclusive="families",
        ),
    )
    all_families: bool = option(
        False,
        Cli(
            "--all-families",
            "consider every family (HPC, GPU, accelerator, bare-metal and one-size included)",
            parse=_bool,
            kind="flag",
            exclusive="families",
        ),
    )
    # Pricing.
    pricing: str = option(
        "on-demand",
        Cli(
            "--pricing",
            "price column: on-demand, spot, 1y or 3y committed (the shipped AWS rows have "
            "on-demand and spot prices only; a --catalog or --prices file may add its own "
            "commit_1y_usd_hour, commit_3y_usd_hour)",
            choices=PRICINGS,
            commands=FLEET,
        ),
    )
    spot_reserve: float | None = option(
        None,
        Cli(
            "--spot-reserve",
            "with spot prices: fraction of the fleet that may be reclaimed at once, kept as "
            "extra instances (default: for AWS types the Spot Advisor lists, the spares their "
            "interruption band calls for at --confidence; for GCP and Azure, those of an "
            "estimated 30%% a month; 20%% for others, an estimate)",
            parse=parse_fraction,
            metavar="FRACTION",
            commands=FLEET,
        ),
    )
    # Where to look.
    providers: str = option(
        "", Cli("--provider", "only these providers (comma list; default: all)", cli_default=None)
    )
    regions: str = option(
        "",
        Cli(
            "--region",
            "only these regions (comma list), or all (default: us-east-1, us-central1 and "
            "the regions of your --catalog files)",
            cli_default=None,
        ),
    )
    arch: str = option(
        "",
        Cli(
            "--arch",
            "only these architectures: x86_64, arm64 (comma list; default: all)",
            cli_default=None,
        ),
    )
    families: str = option(
        "", Cli("--family", "only these families (comma list; default: all)", cli_default=None)
    )
    catalog: tuple[str, ...] = option(
        (),
        Cli(
            "--catalog",
            "your own catalog CSV (same columns); adds or replaces entries",
            parse=path_arg(INPUT_FILE),
            kind="append",
            metavar="PATH",
        ),
    )
    prices: str | None = option(
        None,
        Cli(
            "--prices",
            "your own prices CSV over the catalog's (provider,region,instance_type,pricing,"
            "usd_per_hour[,source]: negotiated discounts, reservations, savings plans)",
            parse=path_arg(INPUT_FILE),
            metavar="CSV",
            commands=FLEET,
        ),
    )
    # Evidence.
    runs: tuple[str, ...] = option(
        (),
        Cli(
            "--runs",
            "run folders whose measurements replace or calibrate the model",
            parse=path_arg(RUN_FOLDER),
            kind="many",
            metavar="DIR",
        ),
    )
    allow_simulated: bool = option(
        False,
        Cli(
            "--allow-simulated",
            "accept simulated runs (their use is marked in the output)",
            parse=_bool,
            kind="flag",
        ),
    )
    allow_unused_runs: bool = option(
        False,
        Cli(
            "--allow-unused-runs",
            "answer from the model (with a warning) when no run measured this workload, "
            "instead of exit 1",
            parse=_bool,
            kind="flag",
        ),
    )
    profiles: tuple[str, ...] = option(
        (),
        Cli(
            "--profile",
            "CPU profile JSON (python -m runners calibrate); its coefficients serve every "
            "catalog type of its CPU platform",
            parse=path_arg(INPUT_FILE),
            kind="append",
            metavar="FILE",
            commands=WORKLOAD,
        ),
    )
    # How sure, and what to show.
    confidence: float = option(
        0.95,
        Cli(
            "--confidence",
            "also give each option's count that keeps the headroom with this "
            "probability (default 0.95)",
            parse=parse_confidence,
            metavar="FRACTION",
        ),
    )
    sort: str = option(
        "cost-at-confidence",
        Cli(
            "--sort",
            "rank by the cost of the count at --confidence (cost-at-confidence, the default) or "
            "of the point estimate (cost), or by the point estimate's gCO2e per million requests "
            "(carbon)",
            choices=SORTS,
            commands=FLEET,
        ),
    )
    top: int | None = option(
        10,
        Cli(
            "--top",
            "options to show (default 10 in the table, all in json/csv)",
            parse=int_at_least(1),
            commands=TABLES | {"compare"},
        ),
    )

    def __post_init__(self) -> None:
        self.check()

    # -- checks and derived objects ---------------------------------------------------------

    def check(self) -> None:
        """Raise `InputError` for a value out of range (the message names it)."""
        from sizing.fleet.question import check_target_rps

        check_target_rps(self.rps)
        for name in ("pricing", "sort", "network", "clients"):
            allowed = _choices(name)
            if getattr(self, name) not in allowed:
                raise InputError(
                    f"unknown {name} {getattr(self, name)!r}; expected one of: "
                    + ", ".join(allowed)
                )
        if not (isinstance(self.mix, int) and 1 <= self.mix <= 8):
            raise InputError(f"mix must be 1 to 8 instance types, got {self.mix!r}")
        if self.top is not None and not (isinstance(self.top, int) and self.top >= 1):
            raise InputError(f"top must be an integer >= 1, got {self.top!r}")
        if self.all_families and self.include_families:
            raise InputError("give --include-families or --all-families, not both")
        try:
            family_groups(",".join(self.include_families) or "all")
            growth_rate(self.growth)
        except argparse.ArgumentTypeError as exc:
            raise InputError(str(exc)) from None
        self.workload()
        self.rules().check()

    def workload(self) -> Workload:
        """The `Workload` of this request (checked), a configuration's values applied."""
        work = self._flag_workload()
        if not (self.nginx_conf or self.ingress_nginx or self.conf_server or self.conf_location):
            return work
        from sizing.workload.conf import apply

        reading = self.configuration()
        given = {f.name for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}
        return work if reading is None else apply(work, reading, given)

    def configuration(self) -> Reading | None:
        """What ``--nginx-conf`` or ``--ingress-nginx`` read, or None without them."""
        if not (self.nginx_conf or self.ingress_nginx or self.conf_server or self.conf_location):
            return None
        from sizing.workload.conf import read

        return read(self.nginx_conf, self.ingress_nginx, self.conf_server, self.conf_location)

    def _flag_workload(self) -> Workload:
        return Workload(
            self.scenario,
            self.protocol,
            self.file_bytes,
            self.sla_p99_ms,
            requests_per_connection=self.requests_per_connection,
            tls_resumption=self.tls_resumption,
            tls_key=self.tls_key,
            gzip=self.gzip,
            gzip_level=self.gzip_level,
            size_mix=self.size_mix,
            http_version=self.http_version,
            burst_network=self.network == "burst",
            internet_facing=self.internet_facing,
            environment=self.environment,
            jwt=self.jwt,
        )

    def rules(self) -> FleetRules:
        """The `sizing.fleet.counts.FleetRules` of this request (the spot reserve resolved)."""
        from sizing.fleet.counts import DEFAULT_SPOT_RESERVE, FleetRules

        reserve = self.spot_reserve
        if reserve is None:
            reserve = DEFAULT_SPOT_RESERVE if self.pricing == "spot" else 0.0
        return FleetRules(
            self.headroom,
            self.redundancy,
            self.zones,
            self.zone_loss,
            self.pricing,
            reserve,
            self.max_count,
            self.confidence,
        )

    def family_groups(self) -> tuple[str, ...]:
        """The family groups `sizing.fleet.recommend.recommend` brings back.

        ``all`` with ``--all-families``, and when ``--family`` names families: those are
        wanted, whatever their group.
        """
        if self.all_families or self.families:
            return ("all",)
        return self.include_families

    def growth_rate(self) -> tuple[str, float] | None:
        """The growth as given and its factor per month, or None (`sizing.fleet.growth`)."""
        if not self.growth:
            return None
        from sizing.fleet.growth import parse_growth

        return self.growth, parse_growth(self.growth)

    def absolute(self) -> SizingRequest:
        """A copy whose catalog, price, run, profile and configuration paths are absolute."""
        from pathlib import Path

        def abs_(paths: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(str(Path(p).resolve()) for p in paths)

        return self.replace(
            catalog=abs_(self.catalog),
            runs=abs_(self.runs),
            profiles=abs_(self.profiles),
            nginx_conf="".join(abs_((self.nginx_conf,) if self.nginx_conf else ())),
            ingress_nginx="".join(abs_((self.ingress_nginx,) if self.ingress_nginx else ())),
            prices="".join(abs_((self.prices,) if self.prices else ())) or None,
        )

    def replace(self, **changes: Any) -> SizingRequest:
        """A copy with ``changes`` (checked)."""
        return dataclasses.replace(self, **changes)

    # -- command line ------------------------------------------------------------------------

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SizingRequest:
        """The request a subcommand's parsed flags describe (flags it lacks keep defaults)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            m = f.metadata
            if m["flag"] is None or not hasattr(args, f.name):
                continue
            value = getattr(args, f.name)
            if value is None and m["cli_default"] is None:
                continue  # not given: the request's default
            values.update(_split(f.name, value))
        return cls(**values)

    # -- notebook parameters -------------------------------------------------------------------

    def to_parameters(self) -> dict[str, object]:
        """One JSON-able value per notebook parameter (see `from_parameters`)."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            out[_param(f)] = _to_json(getattr(self, f.name))
        return out

    @classmethod
    def from_parameters(cls, given: Mapping[str, object]) -> SizingRequest:
        """The request from notebook parameters (names not of the request are ignored).

        Values are JSON values as `to_parameters` writes them, or text (``papermill -p``,
        ``--parameter``) read by the flag's own parser.

        Raises
        ------
        InputError
            For a bad value: ``parameter NAME: why``.
        """
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = _param(f)
            if name not in given:
                continue
            try:
                values.update(_split(f.name, _from_json(f, given[name])))
            except (argparse.ArgumentTypeError, InputError, TypeError, ValueError) as exc:
                raise InputError(f"parameter {name}: {exc}") from None
        return cls(**values)

    @classmethod
    def from_dict(cls, given: Mapping[str, object]) -> SizingRequest:
        """As `from_parameters`, refusing names that are not parameters of the request."""
        known = parameter_names()
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise InputError(
                f"{unknown[0]!r} is not a parameter of the sizing request; valid: "
                + ", ".join(sorted(known))
            )
        return cls.from_parameters(given)


def _choices(name: str) -> tuple[str, ...]:
    """The values field ``name``'s flag accepts (`option`'s ``choices``)."""
    choices: tuple[str, ...] = next(
        f.metadata for f in dataclasses.fields(SizingRequest) if f.name == name
    )["choices"]
    return choices


def _param(f: dataclasses.Field[object]) -> str:
    return str(f.metadata["param"] or f.name)


def parameter_names() -> list[str]:
    """The notebook parameters of a request, in field order."""
    return [_param(f) for f in dataclasses.fields(SizingRequest)]


def _split(name: str, value: Any) -> dict[str, Any]:
    """A flag's value as request fields (``--file-size`` sets the size and the mix)."""
    if name == "file_bytes" and isinstance(value, tuple):
        size, mix = value
        return {"file_bytes": int(size), **({"size_mix": tuple(mix)} if mix else {})}
    if name == "size_mix" and not value:
        return {}  # no mix: the one size (a mix --file-size gave stays)
    if isinstance(value, list):
        return {name: tuple(value)}
    return {name: value}


def _to_json(value: object) -> object:
    if isinstance(value, float) and math.isinf(value):
        return None  # unlimited requests per connection
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _from_json(f: dataclasses.Field[Any], value: Any) -> Any:
    """A parameter's value as the field holds it: text through the flag's parser."""
    m = f.metadata
    kind = m["kind"]
    if f.name == "requests_per_connection" and value in (None, 0):
        return math.inf  # None (and 0, the old notebooks' spelling): no limit
    if kind in ("append", "many"):
        if isinstance(value, str):
            value = [value] if value else []
        return tuple(m["parse"](str(v)) for v in value)
    if f.name == "size_mix" and not isinstance(value, str):
        return tuple((int(s), float(w)) for s, w in value)
    if isinstance(value, str):
        if m["choices"] is not None or m["parse"] is _text or value == f.default == "":
            return value  # an empty path: none
        return m["parse"](value)
    if f.name == "file_bytes" and isinstance(value, int | float):
        return (int(value), ())
    if kind == "flag":
        return bool(value)
    return value


def parameters_cell() -> str:
    """The report notebook's ``parameters`` cell: one line per request field, its default."""
    lines = []
    for f in dataclasses.fields(SizingRequest):
        shown = f.metadata["param_default"]
        value = _to_json(f.default) if shown is dataclasses.MISSING else shown
        lines.append(f"{_param(f)} = {value!r}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the request's flags that ``command`` takes to ``parser``, in field order."""
    groups: dict[str, Any] = {}
    for f in dataclasses.fields(SizingRequest):
        m = f.metadata
        if m["flag"] is None or command not in m["commands"]:
            continue
        default = f.default if m["cli_default"] is dataclasses.MISSING else m["cli_default"]
        if command == "recommend" and f.name == "top":
            default = None  # 10 in the table, all in json and csv
        kw: dict[str, Any] = {"dest": f.name, "help": m["help"]}
        if m["kind"] == "flag":
            kw["action"] = "store_true"
        else:
            if m["kind"] == "append":
                kw.update(action="append", default=[])
            elif m["kind"] == "many":
                kw.update(nargs="+", default=[])
            else:
                kw["default"] = default
            if m["choices"] is not None:
                kw["choices"] = m["choices"]
            elif m["parse"] is not _text:
                kw["type"] = m["parse"]
            if m["metavar"]:
                kw["metavar"] = m["metavar"]
            if m["required"]:
                kw["required"] = True
                kw.pop("default", None)
        if f.name == "file_bytes":
            kw["default"] = (1024, ())
        target: Any = parser
        if m["exclusive"]:
            if m["exclusive"] not in groups:
                groups[m["exclusive"]] = parser.add_mutually_exclusive_group()
            target = groups[m["exclusive"]]
        target.add_argument(m["flag"], **kw)
