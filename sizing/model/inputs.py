"""Values of the capacity model's uncertain inputs, moved from their point values.

`sizing.analyses.sensitivity` asks what the answer would be with one input at the end of its
range. It says so with a `ModelInputs` value, passed to `sizing.model.capacity.
instance_capacities` (through `sizing.fleet.question.FleetQuestion.model`); the model reads
each input through it, and nothing of the model's modules is assigned. The default value moves
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sizing.model.costmodel import Coefficient
from sizing.model.platforms import Platform

__all__ = ["POINT", "ModelInputs"]


@dataclass(frozen=True)
class ModelInputs:
    """Inputs of the capacity model at other values than their point values.

    Attributes
    ----------
    coefficients : tuple of (str, float)
        Cost coefficient name -> its value [its unit]; the standard error keeps its relative
        size. Moves the current stack's coefficient where it has one, else the reference's.
    core_speeds : tuple of (str, float)
        CPU platform id -> its speed per core [x reference core].
    cloud_speeds : tuple of (str, float)
        CPU platform id -> a factor on the per-vCPU speed fitted to published measurements.
    estimates : tuple of (str, float)
        Estimated model constant (`sizing.model.capacity.ESTIMATES`) -> its value [its unit].
    measured : tuple of (str, float)
        Instance family -> a factor on its measured capacity (runs as evidence).
    """

    coefficients: tuple[tuple[str, float], ...] = ()
    core_speeds: tuple[tuple[str, float], ...] = ()
    cloud_speeds: tuple[tuple[str, float], ...] = ()
    estimates: tuple[tuple[str, float], ...] = ()
    measured: tuple[tuple[str, float], ...] = ()

    def coefficients_of(self, coefs: dict[str, Coefficient]) -> dict[str, Coefficient]:
        """``coefs`` with the moved coefficients at their values (the same relative error)."""
        out = dict(coefs)
        for name, v in self.coefficients:
            c = out[name]
            out[name] = replace(
                c, value=v, stderr=c.stderr * (v / c.value) if c.value else c.stderr
            )
        return out

    def platform(self, plat: Platform) -> Platform:
        """``plat`` at its moved speed per core, if moved."""
        speed = dict(self.core_speeds).get(plat.platform_id)
        return plat if speed is None else replace(plat, core_speed=speed)

    def cloud_speed(
        self, plat: Platform, got: tuple[float, float, str] | None
    ) -> tuple[float, float, str] | None:
        """A fitted per-vCPU speed ``got`` of ``plat`` scaled by its moved factor, if moved."""
        factor = dict(self.cloud_speeds).get(plat.platform_id)
        if got is None or factor is None:
            return got
        return got[0] * factor, got[1], got[2]

    def estimate(self, name: str, value: float) -> float:
        """An estimated constant's moved value, else ``value`` (its point value)."""
        return dict(self.estimates).get(name, value)

    def measured_factor(self, family: str) -> float:
        """The factor on the measured capacity of ``family`` [1]."""
        return dict(self.measured).get(family, 1.0)


#: Every input at its point value.
POINT = ModelInputs()
