"""Deploy NGINX scenarios to target hosts and drive wrk sweeps (see the issue tracker)."""
