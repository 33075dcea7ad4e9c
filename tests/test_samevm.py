"""The same-VM client's cost converted with its own platform speed (`sizing.fitting.samevm`).

Pure: the shipped cloud model and the fitted SpareCores rows of data/cloud/measurements.csv.
"""

from __future__ import annotations

import math

import pytest

from sizing.fitting.samevm import (
    client_rows,
    client_speed,
    nginx_share,
    same_vm_client_cost,
    speed_ratio,
)


def test_speed_ratio_undoes_the_fits_moves_from_the_stand_in() -> None:
    """NGINX's speed over the stand-in's placement is the product of the fit's three shifts."""
    assert speed_ratio(0.0, 0.0, 0.0) == 1.0
    assert speed_ratio(math.log(1.3), 0.0, 0.0) == pytest.approx(1.3)
    assert speed_ratio(math.log(1.2), math.log(0.7), math.log(0.9)) == pytest.approx(
        1.2 * 0.7 * 0.9
    )


def test_nginx_share_charges_the_client_at_its_own_speed() -> None:
    """A client slower than NGINX on the platform (ratio > 1) takes more of the VM."""
    assert nginx_share(10.0, 10.0) == pytest.approx(0.5)
    assert nginx_share(10.0, 10.0, ratio=1.0) == pytest.approx(0.5)
    # The client at half NGINX's speed: its 10 us cost 20 us on NGINX's scale.
    assert nginx_share(10.0, 10.0, ratio=2.0) == pytest.approx(1 / 3)
    assert nginx_share(10.0, 10.0, ratio=0.5) == pytest.approx(2 / 3)
    assert nginx_share(10.0, 0.0) == 1.0
    for bad in ((0.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, 0.0)):
        with pytest.raises(ValueError):
            nginx_share(*bad)


def test_client_speed_follows_the_stand_in_not_nginx() -> None:
    """Where real NGINX gained more than the stand-in (Graviton2), the client is slower."""
    g2 = client_speed("graviton2", 1, "small_static")
    assert g2.ratio > 1.2 and "stand-in's placement of graviton2" in g2.source
    # A hyper-thread: NGINX's own hyper-thread gain (serving clients elsewhere) is the lower.
    assert client_speed("cascade_lake", 2, "small_static").ratio < 0.85
    # Measured only as whole cores: the hyper-thread kind takes the class's hyper-thread shift.
    whole, ht = (
        client_speed("graviton4", 1, "small_static"),
        client_speed("graviton4", 2, "small_static"),
    )
    assert ht.ratio < whole.ratio
    unknown = client_speed("no-such-platform", 2, "small_static")
    assert unknown.ratio == 1.0 and "NGINX's speed" in unknown.source


def test_the_client_cost_is_flatter_at_its_own_speed_than_at_nginxs() -> None:
    """The evidence behind the conversion: over instance types, the client's own speed explains
    its cost (log sd ~0.10) and NGINX's does not (~0.28)."""
    c = same_vm_client_cost()
    assert c.n == len(client_rows()) > 300
    assert c.rel_sd < 0.15 < 0.2 < c.nginx_speed_sd
    assert "client's own speed" in c.source and "SpareCores" in c.source
