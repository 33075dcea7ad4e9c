"""The configuration features that move a request's CPU cost, named once for both packages.

``sizing`` reads them from a user's nginx.conf (or an ingress-nginx ConfigMap) and prices them;
``runners`` measures what each costs against the reference static config on the same host and
writes ``data/reference/feature-costs.csv``. A workload carries a feature as how many times it
runs per request (``1.0``: on every request; ``0.3``: on 30% of them).

What the workload already says in its own fields is not repeated here: TLS and its
resumption, HTTP/2, keep-alive (requests per connection), gzip and JWT checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trialtable.fields import Field, Fields


@dataclass(frozen=True)
class Feature:
    """One configuration feature.

    Attributes
    ----------
    name : str
        Its name in workloads, the feature-cost table and the answer.
    meaning : str
        What runs per request when it is on.
    directives : tuple of str
        The nginx directives that turn it on.
    """

    name: str
    meaning: str
    directives: tuple[str, ...]


#: The ingress-nginx controller's per-request work, measured as one feature (metrics on).
INGRESS_NGINX = "ingress_nginx"
#: The same with the controller's metrics off (no ``monitor.call()`` in the log phase).
INGRESS_NGINX_NO_METRICS = "ingress_nginx_no_metrics"
#: The extra of ingress-nginx's ``upstreaminfo`` access-log line over the ``combined`` one.
UPSTREAMINFO_LOG = "access_log_upstreaminfo"
#: The controller's default ``log-format-upstream`` (kubernetes/ingress-nginx@dbb11b92
#: internal/ingress/controller/config/config.go:54), rendered as ``log_format upstreaminfo``
#: (rootfs/etc/nginx/template/nginx.tmpl:351) and used by its access log (nginx.tmpl:367).
UPSTREAMINFO_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] '
    "[$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length "
    "$upstream_response_time $upstream_status $req_id"
)
#: NGINX's predefined ``combined`` format (https://nginx.org/en/docs/http/ngx_http_log_module.html).
COMBINED_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent"'
)

#: The directives of the controller's per-request Lua (both `INGRESS_NGINX` rows).
INGRESS_DIRECTIVES = (
    "rewrite_by_lua_file",
    "balancer_by_lua_file",
    "header_filter_by_lua_file",
    "log_by_lua_file",
)

#: Every feature, in the order the answer lists them.
FEATURES: tuple[Feature, ...] = (
    Feature("access_log", "one access-log line written per request (unbuffered)", ("access_log",)),
    Feature(
        "access_log_buffered",
        "one access-log line into a buffer per request (buffer= or gzip= set)",
        ("access_log",),
    ),
    Feature(
        "access_log_container",
        "one access-log line per request to a container runtime's stdout (access_log "
        "/dev/stdout in a container: a pipe the runtime's shim copies to its log reader)",
        ("access_log",),
    ),
    Feature(
        UPSTREAMINFO_LOG,
        "the extra of an access-log line in ingress-nginx's upstreaminfo format over the "
        "combined line (nine more fields: request length and time, upstream name, address, "
        "response length and time, status, request id), on top of the line's access_log feature",
        ("log_format",),
    ),
    Feature(
        "proxy_keepalive",
        "the request proxied over a kept-alive upstream connection",
        ("proxy_pass", "keepalive", "proxy_http_version"),
    ),
    Feature(
        "proxy_new_connection",
        "the request proxied over a new upstream TCP connection (no upstream keep-alive)",
        ("proxy_pass",),
    ),
    Feature("proxy_cache_hit", "the response served from proxy_cache", ("proxy_cache",)),
    Feature("lua_rewrite", "a Lua handler in the rewrite phase", ("rewrite_by_lua_block",)),
    Feature("lua_access", "a Lua handler in the access phase", ("access_by_lua_block",)),
    Feature("lua_content", "a Lua handler that makes the response", ("content_by_lua_block",)),
    Feature("lua_balancer", "a Lua upstream balancer", ("balancer_by_lua_block",)),
    Feature("lua_header_filter", "a Lua header filter", ("header_filter_by_lua_block",)),
    Feature("lua_log", "a Lua handler in the log phase", ("log_by_lua_block",)),
    Feature(
        INGRESS_NGINX,
        "what the ingress-nginx controller's template runs on every proxied request: Lua in "
        "the rewrite, balancer, header-filter and log phases (a balancer over an endpoints "
        "table, the monitor's metrics table JSON-encoded), its set/map variables, $req_id and "
        "proxy headers; its access log line is a feature of its own",
        INGRESS_DIRECTIVES,
    ),
    Feature(
        INGRESS_NGINX_NO_METRICS,
        f"{INGRESS_NGINX} with the controller's metrics off (--enable-metrics=false): its log "
        "phase runs the balancer's log step only, no monitor.call() building the metrics",
        INGRESS_DIRECTIVES,
    ),
    Feature("njs_access", "an njs handler in the access phase", ("js_access",)),
    Feature("njs_content", "an njs handler that makes the response", ("js_content",)),
    Feature("limit_req", "a request-rate limit checked", ("limit_req",)),
    Feature("limit_conn", "a connection limit checked", ("limit_conn",)),
    Feature(
        "open_file_cache_off",
        "a static file opened, checked and closed on every request (no open_file_cache, "
        "NGINX's default: the directive's absence, or 'off', turns this on): open, fstat and "
        "close where a cached descriptor would do",
        ("open_file_cache",),
    ),
    Feature(
        "sendfile_off",
        "a static file's body read into memory and written to the socket over plain HTTP/1.1 "
        "(sendfile off, NGINX's default), where sendfile would hand the kernel the page cache",
        ("sendfile",),
    ),
    Feature(
        "tcp_nopush_off",
        "with sendfile on over plain HTTP/1.1, the response header sent in a segment of its own "
        "before the file (tcp_nopush off, NGINX's default), where tcp_nopush would send them "
        "together",
        ("tcp_nopush",),
    ),
    Feature(
        "try_files_check",
        "one try_files candidate looked up on the file system per request (a stat, where no "
        "open_file_cache holds the answer) before the file is served or the fallback taken",
        ("try_files",),
    ),
)

#: Features whose pairs' reference ran with other features on (the row is the cost on top of
#: them): the model prices that reference request with them (`sizing.model.features`).
REFERENCE_WITH: dict[str, tuple[str, ...]] = {"try_files_check": ("open_file_cache_off",)}

#: Feature names, in order.
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)

#: The most times one feature may run per request (a sane bound, not a measured one).
MAX_PER_REQUEST = 100.0


def check_features(features: Mapping[str, float]) -> dict[str, float]:
    """The features, checked: known names, finite counts per request in ``[0, 100]``.

    Parameters
    ----------
    features : mapping of str to float
        Feature name -> times it runs per request [1].

    Returns
    -------
    dict of str to float
        The same, in `FEATURE_NAMES` order, zero counts left out.

    Raises
    ------
    ValueError
        One line naming the first bad name or count.
    """
    out: dict[str, float] = {}
    for name, count in features.items():
        if name not in FEATURE_NAMES:
            raise ValueError(
                f"unknown feature {name!r}; expected one of: {', '.join(FEATURE_NAMES)}"
            )
        value = float(count)
        if not 0.0 <= value <= MAX_PER_REQUEST:  # also refuses NaN
            raise ValueError(
                f"feature {name}: {count!r} times per request is outside [0, {MAX_PER_REQUEST:g}]"
            )
        if value:
            out[name] = value
    return {name: out[name] for name in FEATURE_NAMES if name in out}


#: Feature-cost table status of a feature: measured here, or not (the row says why).
MEASURED, NOT_MEASURED = "measured", "not_measured"

#: The fields of ``data/reference/feature-costs.csv``, one row per feature: written by
#: ``python -m runners features``, read by `sizing.model.features`. Costs are CPU time of the
#: nginx workers per request [us] on the measuring host: a feature's extra over the reference
#: static config (the median of per-pair differences, with the bootstrap 95% interval of that
#: median), user space and kernel apart, and the reference request's own cost in the same pairs.
FEATURE_COSTS = Fields(
    "feature costs",
    (
        Field("feature", "str", choices=FEATURE_NAMES),
        Field("status", "str", choices=(MEASURED, NOT_MEASURED)),
        Field("reference", "str", choices=("static", "reverse_proxy")),
        Field("pairs", "int", "pairs", 0, 10_000),
        Field("user_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("user_low_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("user_high_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("kernel_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("kernel_low_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("kernel_high_us", "float", "us/request", -1e4, 1e5, required=False),
        Field("ref_user_us", "float", "us/request", 0.0, 1e5, required=False),
        Field("ref_kernel_us", "float", "us/request", 0.0, 1e5, required=False),
        Field("file_bytes", "int", "B", 0, 1 << 30),
        Field("cpu_model", "str", max_len=200),
        Field("nginx_version", "str", max_len=200),
        Field("measured_at", "str", max_len=40),
        Field("note", "str", required=False, max_len=500),
    ),
)

#: The columns of the feature-cost table, in order.
FEATURE_COST_COLUMNS: tuple[str, ...] = tuple(f.name for f in FEATURE_COSTS)
