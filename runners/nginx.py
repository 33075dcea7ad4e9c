"""Scenarios, configs and the private nginx, under the names the runners first used.

They live in `runners.scenario` (what to serve), `runners.nginxconf` (the config text) and
`runners.deploy` (one private nginx on one host).
"""

from __future__ import annotations

from runners.deploy import KEY_ARGS, Deployment, NginxProcess, is_ip
from runners.nginxconf import affinity_masks, render_conf, render_upstream_conf
from runners.scenario import (
    DEFAULT_FILE_BYTES,
    HEADER_BYTES_RANGE,
    MAX_UPSTREAMS,
    SCENARIOS,
    TLS_KEYS,
    Scenario,
    make_scenario,
    response_size_problem,
)

__all__ = [
    "DEFAULT_FILE_BYTES",
    "HEADER_BYTES_RANGE",
    "KEY_ARGS",
    "MAX_UPSTREAMS",
    "SCENARIOS",
    "TLS_KEYS",
    "Deployment",
    "NginxProcess",
    "Scenario",
    "affinity_masks",
    "is_ip",
    "make_scenario",
    "render_conf",
    "render_upstream_conf",
    "response_size_problem",
]
