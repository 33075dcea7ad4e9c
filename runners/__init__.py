"""Deploy NGINX scenarios to target hosts, drive wrk sweeps and SLA searches, store trials."""
