"""Deploy NGINX scenarios to target hosts, drive load generators, search for the SLA, store trials.

Modules: `hosts` (where commands run), `tools` (the binaries they start, as one map),
`cputime` (CPU time from ``times`` and /proc), `scenario`, `nginxconf`, `deploy` (one private
nginx), `loadgen` (load generators behind one contract), `trial` (judging one trial), `plan`,
`session` (a run's nginx and clients on hosts passed in), `run` (a run's lifecycle and its
``run.json``), `sweep`, `search`, `sim`, `cli`.
"""
