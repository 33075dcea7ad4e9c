"""An ingress-nginx ConfigMap -> the workload of the nginx.conf the controller renders.

The controller renders its nginx.conf from ``rootfs/etc/nginx/template/nginx.tmpl`` with the
ConfigMap's keys over the defaults of ``internal/ingress/controller/config/config.go``
(kubernetes/ingress-nginx@dbb11b92ddb77bee9c35e462479129354c84f939). Every proxied request
runs its Lua handlers:

* ``balancer_by_lua_file .../ngx_conf_balancer.lua`` in ``upstream upstream_balancer``
  (nginx.tmpl line 532);
* ``rewrite_by_lua_file .../ngx_rewrite.lua``, ``header_filter_by_lua_file
  .../ngx_conf_srv_hdr_filter.lua`` and ``log_by_lua_file .../ngx_conf_log_block.lua`` in each
  ingress location (nginx.tmpl lines 1167, 1169 and 1171).

With the location's variables, proxy headers and ``$req_id`` they are one measured feature,
`INGRESS_FEATURE` (``runners.calibrate.ingress`` says what it runs), priced instead of the
minimal Lua handlers of `LUA` that it covers; with the controller's metrics off it is
`INGRESS_NO_METRICS` (no ``monitor.call()`` in the log phase), measured the same way. Whether
metrics are on is the controller's ``--enable-metrics`` flag, not a ConfigMap key: the chart's
values (``controller.metrics.enabled``, ``controller.extraArgs``) say it, and a ConfigMap alone
is read with the default, off (`METRICS_DEFAULT`). The access log's line is the controller's
``upstreaminfo`` format (or ``log-format-upstream``): the line's feature plus its measured
extra over the ``combined`` line, `UPSTREAMINFO_LOG`.

The ConfigMap (or the chart's values) is read with PyYAML's SafeLoader (data, never code; a key
given twice in one mapping refused, as Kubernetes refuses it), at
most `MAX_BYTES`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sizing.errors import InputError
from sizing.workload.conf.derive import (
    CONTROLLER_ACCESS_LOG,
    GZIP_SHARE_ESTIMATE,
    INGRESS_FEATURE,
    INGRESS_NO_METRICS,
    METRICS_DEFAULT,
    RESUMPTION_ESTIMATE,
    STDOUT,
    format_share,
)
from sizing.workload.conf.reading import (
    MAX_COUNT,
    Found,
    Reading,
    read_count,
    read_level,
    read_workers,
)
from sizing.workload.value import Workload
from trialtable.features import UPSTREAMINFO_FORMAT, UPSTREAMINFO_LOG
from trialtable.files import read_bounded
from trialtable.logpath import CONTAINER_LOG

SOURCE = "your ingress-nginx ConfigMap"
#: The same, when the file is the Helm chart's values (its ``controller.config``).
VALUES_SOURCE = "your ingress-nginx chart values"
#: Where the controller's behaviour is read.
REPO = "kubernetes/ingress-nginx@dbb11b92ddb77bee9c35e462479129354c84f939"
TEMPLATE = f"{REPO} rootfs/etc/nginx/template/nginx.tmpl"
DEFAULTS_FILE = f"{REPO} internal/ingress/controller/config/config.go"
#: Largest ConfigMap read [B] (Kubernetes caps a ConfigMap at 1 MiB).
MAX_BYTES = 1024 * 1024
#: Largest integer a ConfigMap value may be (Go's int64, which the controller parses into).
MAX_INT = MAX_COUNT
#: The Helm chart's values that turn the controller's metrics on: ``controller.metrics.enabled``
#: (default false, values.yaml:907-911) passes ``--enable-metrics`` (_params.tpl:57-58), and
#: ``controller.extraArgs`` are passed after it (_params.tpl:69-76: the last flag wins).
CHART = f"{REPO} charts/ingress-nginx"
METRICS_VALUES = f"{CHART}/values.yaml:907-911, templates/_params.tpl:57-58"

#: The Lua handlers every proxied request runs: the minimal-handler feature it would be read as
#: in another nginx.conf -> its template line (`INGRESS_FEATURE` covers them all).
LUA = (
    ("lua_balancer", 532),
    ("lua_rewrite", 1167),
    ("lua_header_filter", 1169),
    ("lua_log", 1171),
)
#: ConfigMap keys read -> (the controller's default, its line in config.go).
DEFAULTS: dict[str, tuple[str, int]] = {
    "use-gzip": ("false", 841),
    "gzip-level": ("1", 806),
    "gzip-min-length": ("256", 807),
    "disable-access-log": ("false", 191),
    "enable-syslog": ("false", 685),
    "upstream-keepalive-connections": ("320", 888),
    "ssl-protocols": ("TLSv1.2 TLSv1.3", 70),
    "ssl-session-cache": ("true", 835),
    "ssl-session-tickets": ("false", 837),
    "keep-alive": ("75", 809),
    "keep-alive-requests": ("1000", 810),
    "worker-processes": ("auto (the number of CPUs)", 844),
    "max-worker-connections": ("16384", 816),
    "use-http2": ("true", 849),
    "proxy-buffering": ("off", 882),
    "error-log-level": ("notice", 42),
    "log-format-upstream": ("upstreaminfo", 54),
}
#: Keys that add per-request work the model cannot cost.
UNCOSTED = (
    "enable-modsecurity",
    "enable-owasp-modsecurity-crs",
    "enable-opentelemetry",
    "use-geoip2",
    "enable-brotli",
    "global-auth-url",
    "location-snippet",
    "server-snippet",
    "http-snippet",
    "enable-real-ip",
)


@dataclass(frozen=True)
class Controller:
    """What a ConfigMap or the chart's values say of the controller.

    Attributes
    ----------
    data : dict of str to str
        The ConfigMap's keys (the values' ``controller.config``).
    metrics : bool or None
        ``--enable-metrics`` as the values set it; None when the file does not say.
    metrics_where : str
        Where it was read (empty when not said).
    source : str
        What the file was, as the answer names it (`SOURCE` or `VALUES_SOURCE`).
    """

    data: dict[str, str]
    metrics: bool | None = None
    metrics_where: str = ""
    source: str = SOURCE


def _unique_keys_loader() -> Any:
    """``yaml.SafeLoader`` refusing a key given twice in one mapping (as Kubernetes does)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[object] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<": merged keys may be overridden
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {str(key)[:40]!r} given twice", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def load_controller(path: str | os.PathLike[str]) -> Controller:
    """The ConfigMap at ``path`` (or a plain mapping of its keys, or the chart's values)."""
    import yaml

    where = str(path)
    try:
        raw = read_bounded(path, MAX_BYTES, regular_only=True)
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}") from None
    try:
        doc: Any = yaml.load(raw, Loader=_unique_keys_loader())  # a SafeLoader
    # ValueError: an integer of thousands of digits, a date of a 13th month
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        twice = str(getattr(exc, "problem", "")).startswith("key ")
        why = exc.problem if twice else "not a YAML ConfigMap"  # type: ignore[union-attr]
        raise InputError(f"{where}{line}: {why}") from None
    metrics, said, source = None, "", SOURCE
    if isinstance(doc, dict) and isinstance(doc.get("controller"), dict):
        metrics, said = _values_metrics(doc["controller"], where)
        doc, source = doc["controller"].get("config"), VALUES_SOURCE
    elif isinstance(doc, dict) and ("data" in doc or doc.get("kind") == "ConfigMap"):
        doc = doc.get("data")
    doc = {} if doc is None else doc
    if not isinstance(doc, dict) or not all(isinstance(k, str) for k in doc):
        raise InputError(f"{where}: expected a ConfigMap (kind: ConfigMap, data: key: value)")
    for key, value in doc.items():
        big = isinstance(value, int) and abs(value) > MAX_INT  # str() refuses 4,300+ digits
        if big or isinstance(value, (dict, list, set)):  # str() of aliased nests would not end
            what = "a number too large" if big else f"a {type(value).__name__}"
            raise InputError(
                f"{where}: {key[:40]!r} is {what}, not a ConfigMap value (a string, number or "
                "true/false)"
            )
    data = {k: str(v).strip().lower() if isinstance(v, bool) else str(v) for k, v in doc.items()}
    return Controller(data, metrics, said, source)


#: Go's ``strconv.ParseBool``, which reads the controller's ``--enable-metrics=VALUE``: its
#: words, and what each means; any other value stops the controller at start.
GO_BOOL = {w: True for w in ("1", "t", "T", "TRUE", "true", "True")} | {
    w: False for w in ("0", "f", "F", "FALSE", "false", "False")
}


def _go_bool(value: object, where: str) -> bool:
    """A value the chart passes as ``--flag=VALUE``, as the controller reads it, or InputError.

    A YAML true/false is itself; a string or integer is read by `GO_BOOL` (Go's
    ``strconv.ParseBool``); anything else the controller refuses, and so does this.
    """
    if isinstance(value, bool):
        return value
    small = isinstance(value, int) and abs(value) <= MAX_INT
    word = str(value) if isinstance(value, str) or small else None
    if word is None or word not in GO_BOOL:
        shown = repr(word[:40]) if word is not None else f"a {type(value).__name__}"
        raise InputError(
            f"{where} is {shown}, not a value the controller's --enable-metrics "
            "reads (true, false, 1, 0)"
        )
    return GO_BOOL[word]


def _flag_on(value: object, where: str) -> bool:
    """An ``extraArgs`` value as the flag reads it.

    Empty or null passes ``--flag`` alone (on), else ``--flag=value`` (`_go_bool`).
    """
    return value is None or value == "" or _go_bool(value, where)


def _values_metrics(controller: Mapping[object, object], where: str) -> tuple[bool, str]:
    """``--enable-metrics`` as the chart's ``controller`` values pass it, and where read.

    The chart passes ``--enable-metrics=VALUE`` only for a truthy ``metrics.enabled``
    (``_params.tpl:57-58``), so a false, zero, empty or null one leaves the default, off.
    """
    extra = controller.get("extraArgs")
    if extra is not None and not isinstance(extra, dict):
        raise InputError(
            f"{where}: controller.extraArgs is a {type(extra).__name__}, not a mapping"
        )
    if isinstance(extra, dict) and "enable-metrics" in extra:
        said = f"{where}: controller.extraArgs.enable-metrics"
        return _flag_on(extra["enable-metrics"], said), said
    metrics = controller.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        raise InputError(
            f"{where}: controller.metrics is a {type(metrics).__name__}, not a mapping"
        )
    if isinstance(metrics, dict) and "enabled" in metrics:
        said = f"{where}: controller.metrics.enabled"
        on = bool(metrics["enabled"]) and _go_bool(metrics["enabled"], said)
        return on, f"{said} ({METRICS_VALUES})"
    return False, f"{where}: no controller.metrics.enabled, the chart's default false " + (
        f"({METRICS_VALUES})"
    )


def _flag(data: dict[str, str], key: str) -> bool:
    return data.get(key, DEFAULTS[key][0]).strip().lower() == "true"


def derive_ingress(path: str | os.PathLike[str]) -> Reading:
    """The workload of an ingress-nginx controller configured by the ConfigMap at ``path``."""
    controller = load_controller(path)
    data = controller.data
    where = str(path)
    found = Found(controller.source)

    def at(key: str) -> str:
        if key in data:
            return f"{where}: {key}"
        default, line = DEFAULTS[key]
        return f"{key}: the controller's default {default}, {DEFAULTS_FILE}:{line}"

    found.value("scenario", "reverse_proxy", f"{TEMPLATE}:1421 (buildProxyPass)")
    found.value("protocol", "https", where)
    found.estimates.append("HTTPS: the controller terminates TLS (give --protocol http if not)")
    lines = ", ".join(f"{line} ({feature})" for feature, line in LUA)
    feature = _metrics(controller, found)
    found.feature(feature, 1.0, "")
    found.provenance[feature] = f"the controller's template ({TEMPLATE}:{lines})"
    _ingress_values(data, found, at)
    _access_log(data, found, at)
    for key in UNCOSTED:
        if key in data and data[key].strip().lower() not in ("", "false", "0"):
            found.not_costed(key, where)
    for key in sorted(set(DEFAULTS) - {"use-gzip", "upstream-keepalive-connections"}):
        if key == "log-format-upstream":
            continue  # the line's length is in its feature's note (`_access_log`)
        found.settings[key] = data.get(key, DEFAULTS[key][0] + " (the controller's default)")
    workload = Workload(
        **found.values, features=tuple(found.features.items()), uncosted=tuple(found.uncosted)
    )
    chosen = f"the ingress-nginx controller's rendered nginx.conf ({TEMPLATE})"
    return Reading(where, (where,), chosen, workload, found)


def _metrics(controller: Controller, found: Found) -> str:
    """The controller's per-request feature: with metrics (`INGRESS_FEATURE`) or without."""
    on, where = controller.metrics, controller.metrics_where
    if on is None:
        on, where = METRICS_DEFAULT[0], f"{found.source}: not said, {METRICS_DEFAULT[1]}"
        found.estimates.append(
            f"metrics {'on' if on else 'off'}: a ConfigMap does not say whether the controller "
            "runs with --enable-metrics; assumed its default (give the chart's values, "
            "controller.metrics.enabled, to say)"
        )
    found.settings["metrics"] = f"{'on' if on else 'off'} ({where})"
    return INGRESS_FEATURE if on else INGRESS_NO_METRICS


def _number(data: dict[str, str], key: str, at: Callable[[str], str]) -> float:
    """The ConfigMap's count at ``key`` (or the controller's default), or InputError.

    The controller reads the keep-alive keys into Go integers and renders them into
    ``keepalive_timeout`` and ``keepalive_requests``, which take no negative value: a
    fraction, NaN or a negative number would not load (`read_count`).
    """
    return float(read_count(data.get(key, DEFAULTS[key][0]), at(key)))


def _ingress_values(data: dict[str, str], found: Found, at: Callable[[str], str]) -> None:
    """Keep-alive, HTTP/2, TLS resumption, gzip and upstream keep-alive."""
    if _flag(data, "use-http2"):
        found.value("http_version", "2", at("use-http2"))
    keepalive, requests = _number(data, "keep-alive", at), _number(data, "keep-alive-requests", at)
    # A count of 0 or less renders no keepalive (nginx.tmpl: gt UpstreamKeepaliveConnections 0)
    key = "upstream-keepalive-connections"
    upstream = read_count(data.get(key, DEFAULTS[key][0]), at(key), low=-MAX_INT - 1)
    if keepalive <= 0:
        found.value("requests_per_connection", 1.0, at("keep-alive"))
    else:
        found.value("requests_per_connection", max(requests, 1.0), at("keep-alive-requests"))
    if _flag(data, "ssl-session-cache") or _flag(data, "ssl-session-tickets"):
        found.value("tls_resumption", RESUMPTION_ESTIMATE, at("ssl-session-cache"))
        found.estimates.append(
            f"TLS resumption {RESUMPTION_ESTIMATE:.0%}: a session cache or tickets on, "
            "the share of returning clients unknown"
        )
    if _flag(data, "use-gzip"):
        found.value("gzip", GZIP_SHARE_ESTIMATE, at("use-gzip"))
        level = data.get("gzip-level", DEFAULTS["gzip-level"][0])
        found.value("gzip_level", read_level(level, at("gzip-level")), at("gzip-level"))
        found.estimates.append(
            f"gzip on {GZIP_SHARE_ESTIMATE:.0%} of the response bytes: the share of "
            "responses of the gzip-types is unknown"
        )
    workers, where = data.get("worker-processes", "auto").strip(), at("worker-processes")
    if workers != "auto":
        found.value("workers", read_workers(workers, where), where)
    kept = "proxy_keepalive" if upstream > 0 else "proxy_new_connection"
    found.feature(kept, 1.0, at("upstream-keepalive-connections"))


def _access_log(data: dict[str, str], found: Found, at: Callable[[str], str]) -> None:
    """The access log: its line's feature, and its ``upstreaminfo`` format's extra."""
    enabled = data.get("enable-access-log", "true").strip().lower() != "false"
    http_off = data.get("disable-http-access-log", "false").strip().lower() == "true"
    if not enabled or _flag(data, "disable-access-log") or http_off:  # nginx.tmpl:361
        return
    # The default path is /dev/stdout in the controller's image (CONTROLLER_ACCESS_LOG);
    # another path is a file.
    path = data.get("http-access-log-path") or data.get("access-log-path") or CONTROLLER_ACCESS_LOG
    feature = CONTAINER_LOG if path in (CONTROLLER_ACCESS_LOG, *STDOUT) else "access_log"
    found.feature(feature, 1.0, f"{TEMPLATE}:367 ({at('disable-access-log')})")
    if _flag(data, "enable-syslog"):
        found.not_costed("access_log syslog", at("enable-syslog"))
    own = data.get("log-format-upstream", UPSTREAMINFO_FORMAT)
    share, estimate = format_share(own)
    if share > 0:
        where = f"{TEMPLATE}:351 ({at('log-format-upstream')}, {len(own)} characters)"
        found.feature(UPSTREAMINFO_LOG, share, where)
    if estimate:
        found.estimates.append(f"log-format-upstream: {estimate}")
