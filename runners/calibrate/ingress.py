"""The ``ingress_nginx`` feature: what an ingress-nginx controller runs per proxied request.

The config that `runners.calibrate.features` measures against its reverse proxy, doing the
same per-request work as the controller with this project's own short Lua (none of the
controller's code is used). What the controller does was read from
kubernetes/ingress-nginx@dbb11b92ddb77bee9c35e462479129354c84f939 (`REPO`):

- The ingress location sets ten variables of its own (``rootfs/etc/nginx/template/nginx.tmpl``
  lines 1152-1156 and 1187-1201) and five flags its Lua reads
  (``internal/ingress/controller/template/template.go:444-450``), and sends fourteen proxy
  headers (nginx.tmpl:1282-1326), ``X-Request-ID`` from ``map $http_x_request_id $req_id``
  (nginx.tmpl:392, a random ``$request_id`` when the client sends none), with
  ``proxy_buffering off`` (the default ``proxy-buffering``, config.go:882, at nginx.tmpl:1337).
- Rewrite (``rewrite_by_lua_file .../ngx_rewrite.lua``, nginx.tmpl:1167):
  ``lua_ingress.rewrite()`` (``rootfs/etc/nginx/lua/lua_ingress.lua:112-176``) builds a
  table of the five flags, sets ``$pass_access_scheme``, ``$best_http_host`` and
  ``$pass_port``, and for a plain-HTTP request with ``ssl-redirect`` on (the default) asks
  whether a certificate serves the host (``certificate.lua:48-71, 217-223``: a regex, a
  lower-casing and up to two shared-dict reads, cached in ``ngx.ctx``); then
  ``balancer.rewrite()`` (``balancer.lua:283-305, 329-335``) finds the backend's balancer by
  ``$proxy_upstream_name`` and keeps it in ``ngx.ctx``.
- Balancer (``balancer_by_lua_file .../ngx_conf_balancer.lua`` in ``upstream
  upstream_balancer``, nginx.tmpl:532; ``balancer.lua:337-361``): the round-robin balancer
  (the default, ``balancer.lua:27``; ``balancer/round_robin.lua:21-23``) picks an endpoint
  string, checks it against a pattern, and sets one more try and the peer.
- Header filter (``ngx_conf_srv_hdr_filter.lua``, nginx.tmpl:1169;
  ``lua_ingress.lua:178-189``): HSTS is on by default (config.go ``HSTS: true``), so it
  reads ``$scheme``.
- Log (``ngx_conf_log_block.lua``, nginx.tmpl:1171): a shared-dict read of
  ``enablemetrics``, ``balancer.log()`` (``balancer.lua:363-374``) and, with metrics on,
  ``monitor.call()`` (``monitor.lua:34-55, 99-115``): a table of fifteen variables, JSON-
  encoded with cjson per request and kept; a timer joins the batch and sends it once a second
  (``monitor.lua:57-97``; here joined and dropped, there being no collector).

Metrics are on in ``ingress_nginx``, as in the controller versions the published measurements
ran (its ``--enable-metrics`` flag defaults to false only since #12095, 2024-10,
``pkg/flags/flags.go:177``; the Helm chart's ``controller.metrics.enabled`` is false,
``charts/ingress-nginx/values.yaml:911``, and passes the flag only when true,
``charts/ingress-nginx/templates/_params.tpl:57-58``; before #10959, 2024-02, the chart did not
pass it, so the controller's default, then true, held). ``ingress_nginx_no_metrics`` is the same
with metrics off: the worker sets ``enablemetrics`` false and starts no flush timer
(``rootfs/etc/nginx/lua/ngx_conf_init.lua:10, 37``; ``ngx_conf_init_worker.lua:13``), so the log
phase runs ``balancer.log()`` only (``ngx_conf_log_block.lua:7-11``).
The controller stops building metrics beyond 10,000 a second per worker
(``monitor.lua:16, 100``); one worker here serves more than that, so the batch is unbounded
and every request builds its metrics, as at the published rates (a few thousand per worker).
The access log stays off: its line is the ``access_log`` features', and the extra of the
controller's ``upstreaminfo`` line over ``combined`` is ``access_log_upstreaminfo``
(`upstreaminfo_extras`).
"""

from __future__ import annotations

from runners.deploy.conf import ConfExtra
from trialtable.features import UPSTREAMINFO_FORMAT

#: Where the controller's behaviour was read.
REPO = "kubernetes/ingress-nginx@dbb11b92ddb77bee9c35e462479129354c84f939"
#: The name of the backend, as the controller names it (namespace-service-port).
BACKEND = "default-echo-80"
#: Endpoints in the backend's table (all the run's upstream file server).
ENDPOINTS = 4

#: The per-request Lua, defined once per nginx (init_by_lua_block): this project's own code.
LUA_INIT = r"""
local cjson = require("cjson")
local balancer = require("ngx.balancer")
local M = {batch = {}, count = 0, balancers = {}, status_port = 10246}
package.loaded.ingress_feature = M
local function is_true(v) return v == "true" end
local function cert_for(host)
  local certs = ngx.shared.ingress_certs
  local name = string.lower(host)
  if string.sub(name, -1) == "." then name = string.sub(name, 1, -2) end
  local found = certs:get(name)
  if found == nil then
    local rest = string.match(name, "^[^.]+(%..+)$")
    if rest then found = certs:get("*" .. rest) end
  end
  return found
end
local function get_balancer()
  local ctx = ngx.ctx
  if ctx.balancer then return ctx.balancer end
  local b = M.balancers[ngx.var.proxy_upstream_name]
  if b and b.alternatives then b = M.balancers[b.alternatives[1]] or b end
  ctx.balancer = b
  return b
end
function M.sync(host, port, n)
  local b = {endpoints = {}, next = 0}
  for i = 1, n do b.endpoints[i] = {host = host, port = port, key = host .. ":" .. port} end
  M.balancers[ngx.var.proxy_upstream_name] = b
end
function M.rewrite()
  local var = ngx.var
  local loc = {
    force_ssl_redirect = is_true(var.force_ssl_redirect),
    ssl_redirect = is_true(var.ssl_redirect),
    force_no_ssl_redirect = is_true(var.force_no_ssl_redirect),
    preserve_trailing_slash = is_true(var.preserve_trailing_slash),
    use_port_in_redirects = is_true(var.use_port_in_redirects),
  }
  var.pass_access_scheme = var.scheme
  var.best_http_host = var.http_host or var.host
  var.pass_port = var.pass_server_port
  if var.pass_server_port == "443" then var.pass_port = 443 end
  if not loc.force_no_ssl_redirect and var.pass_access_scheme == "http" and loc.ssl_redirect then
    local ctx = ngx.ctx
    if ctx.cert == nil then ctx.cert = cert_for(var.host) ~= nil end
  end
  get_balancer()
end
function M.balance(host, port)
  local b = get_balancer()
  if not b then M.sync(host, port, M.endpoints); b = get_balancer() end
  b.next = b.next % #b.endpoints + 1
  local peer = b.endpoints[b.next]
  if peer.port == M.status_port then return end  -- the controller's status port: never a peer
  balancer.set_more_tries(1)
  assert(balancer.set_current_peer(peer.host, peer.port))
end
function M.header()
  if M.hsts and ngx.var.scheme == "https" then
    ngx.header["Strict-Transport-Security"] = "max-age=31536000"
  end
end
-- the request's metrics as the controller's monitor keeps them: text fields ("-" when unset)
-- and numbers (-1 when unset), each read from one nginx variable
local TEXT = {
  {"host", "host"}, {"namespace", "namespace"}, {"ingress", "ingress_name"},
  {"service", "service_name"}, {"canary", "proxy_alternative_upstream_name"},
  {"path", "location_path"}, {"method", "request_method"}, {"status", "status"},
}
local NUMBER = {
  {"requestLength", "request_length"}, {"requestTime", "request_time"},
  {"responseLength", "bytes_sent"}, {"upstreamLatency", "upstream_connect_time"},
  {"upstreamHeaderTime", "upstream_header_time"},
  {"upstreamResponseTime", "upstream_response_time"},
  {"upstreamResponseLength", "upstream_response_length"},
}
local function metrics(var)
  local m = {}
  for _, f in ipairs(TEXT) do m[f[1]] = var[f[2]] or "-" end
  for _, f in ipairs(NUMBER) do m[f[1]] = tonumber(var[f[2]]) or -1 end
  return m
end
function M.log()
  local on = ngx.shared.ingress_config:get("enablemetrics")
  local b = get_balancer()
  if b and b.after_balance then b:after_balance() end
  if not on then return end
  local m = metrics(ngx.var)
  M.count = M.count + 1
  M.batch[M.count] = cjson.encode(m)
end
function M.flush(premature)
  if premature or M.count == 0 then return end
  local payload = "[" .. table.concat(M.batch, ",", 1, M.count) .. "]"
  M.count = 0
  M.batch = {}
  return payload
end
"""


def lua_worker(metrics: bool) -> str:
    """Run once per worker: the metrics switch and, with metrics on, the once-a-second flush."""
    return (
        f'ngx.shared.ingress_config:set("enablemetrics", {str(metrics).lower()}) '
        'local M = require("ingress_feature") M.hsts = true M.endpoints = '
        + str(ENDPOINTS)
        + " "
        + ("assert(ngx.timer.every(1, M.flush))" if metrics else "")
    )


#: The ingress location's variables (nginx.tmpl:1152-1156, 1187-1201; template.go:444-450).
SETS = (
    ("namespace", '"default"'),
    ("ingress_name", '"echo"'),
    ("service_name", '"echo"'),
    ("service_port", '"80"'),
    ("location_path", '"/"'),
    ("force_ssl_redirect", '"false"'),
    ("ssl_redirect", '"true"'),
    ("force_no_ssl_redirect", '"false"'),
    ("preserve_trailing_slash", '"false"'),
    ("use_port_in_redirects", '"false"'),
    ("balancer_ewma_score", "-1"),
    ("proxy_upstream_name", f'"{BACKEND}"'),
    ("proxy_host", "$proxy_upstream_name"),
    ("pass_access_scheme", "$scheme"),
    ("pass_server_port", "$server_port"),
    ("best_http_host", "$http_host"),
    ("pass_port", "$pass_server_port"),
    ("proxy_alternative_upstream_name", '""'),
)
#: The proxy headers the location sends (nginx.tmpl:1282-1326, the defaults' branches).
HEADERS = (
    ("Host", "$best_http_host"),
    ("Upgrade", "$http_upgrade"),
    ("Connection", "$connection_upgrade"),
    ("X-Request-ID", "$req_id"),
    ("X-Real-IP", "$remote_addr"),
    ("X-Forwarded-For", "$remote_addr"),
    ("X-Forwarded-Host", "$best_http_host"),
    ("X-Forwarded-Port", "$pass_port"),
    ("X-Forwarded-Proto", "$pass_access_scheme"),
    ("X-Forwarded-Scheme", "$pass_access_scheme"),
    ("X-Scheme", "$pass_access_scheme"),
    ("X-Original-Forwarded-For", "$http_x_forwarded_for"),
    ("X-Original-Forwarded-Host", "$http_x_forwarded_host"),
    ("Proxy", '""'),
)


def ingress_extra(path: str, metrics: bool = True) -> ConfExtra:
    """The feature's config lines: the proxy's location for ``path`` made an ingress one.

    Parameters
    ----------
    path : str
        The request path the load asks for (an exact-match location takes it from the
        reference proxy's ``location /``).
    metrics : bool
        The controller's metrics on (``ingress_nginx``) or off (``ingress_nginx_no_metrics``).
    """
    http = (
        "lua_shared_dict ingress_config 1m;",
        "lua_shared_dict ingress_certs 1m;",
        "init_by_lua_block {" + LUA_INIT + "}",
        "init_worker_by_lua_block { " + lua_worker(metrics) + " }",
        "map $http_upgrade $connection_upgrade { default upgrade; '' ''; }",
        'map $http_x_request_id $req_id { default $http_x_request_id; "" $request_id; }',
    )
    location = (
        f"location = {path} {{",
        *(f"    set ${name} {value};" for name, value in SETS),
        "    port_in_redirect off;",
        '    rewrite_by_lua_block { require("ingress_feature").rewrite() }',
        '    header_filter_by_lua_block { require("ingress_feature").header() }',
        '    log_by_lua_block { require("ingress_feature").log() }',
        *(f"    proxy_set_header {name} {value};" for name, value in HEADERS),
        "    proxy_buffering off;",
        "    proxy_http_version 1.1;",
        "    proxy_next_upstream error timeout;",
        "    proxy_pass http://backend;",
        "}",
    )
    upstream = (
        "balancer_by_lua_block { "
        "require('ingress_feature').balance('@UPSTREAM_HOST@', @UPSTREAM_PORT@) }",
    )
    return ConfExtra(http=http, server=location, upstream=upstream)


def upstreaminfo_extras() -> tuple[ConfExtra, ConfExtra]:
    """The ``access_log_upstreaminfo`` pair's lines: (reference, feature).

    Both sides are the proxy with the ingress location's variables the format reads
    (``$proxy_upstream_name``, ``$proxy_alternative_upstream_name``, ``$req_id``) and an
    unbuffered access log to a file; the reference writes the ``combined`` line, the feature
    the controller's default ``upstreaminfo`` line (`UPSTREAMINFO_FORMAT`; config.go:54,
    nginx.tmpl:351 and 367, ``if=$loggable`` with its ``map`` too), so their difference is
    the longer line alone.
    """
    http = (
        'map $http_x_request_id $req_id { default $http_x_request_id; "" $request_id; }',
        "map $request_uri $loggable { default 1; }",
        f"log_format upstreaminfo '{UPSTREAMINFO_FORMAT}';",
    )
    sets = (
        f'set $proxy_upstream_name "{BACKEND}";',
        'set $proxy_alternative_upstream_name "";',
    )
    return (
        ConfExtra(http=http, server=(*sets, "access_log access.log combined if=$loggable;")),
        ConfExtra(http=http, server=(*sets, "access_log access.log upstreaminfo if=$loggable;")),
    )
