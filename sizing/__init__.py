"""Fit NGINX scaling curves and price the fleets that meet an RPS target under a p99 SLA."""

from sizing.capacity import Workload, instance_capacity
from sizing.catalog import filter_catalog, load_catalog
from sizing.curves import CurveFit, fit_curve, fit_usl, select_model
from sizing.recommend import recommend

__all__ = [
    "CurveFit",
    "Workload",
    "filter_catalog",
    "fit_curve",
    "fit_usl",
    "instance_capacity",
    "load_catalog",
    "recommend",
    "select_model",
]
