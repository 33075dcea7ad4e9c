"""Configuration in, workload out: a user's nginx.conf (or ingress-nginx ConfigMap) read.

`load` reads the files (bounded, through crossplane), `derive` maps the directives of the
chosen server and location to a `sizing.workload.value.Workload`, `ingress` does the same
for an ingress-nginx ConfigMap, and `read` is what the command line and the request call.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

from sizing.errors import InputError
from sizing.workload.conf.reading import Reading
from sizing.workload.value import Workload

__all__ = ["Reading", "apply", "read"]


def _signature(path: str) -> tuple[int, int]:
    """The file's change time and size (a cached reading of a changed file is not reused)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return st.st_mtime_ns, st.st_size


def read(
    nginx_conf: str = "", ingress_nginx: str = "", server: str = "", location: str = ""
) -> Reading:
    """The reading of an nginx.conf (with ``server``/``location``) or an ingress ConfigMap.

    Raises
    ------
    InputError
        For both sources or neither, ``--server``/``--location`` without an nginx.conf, and
        everything `sizing.workload.conf.load.load` refuses.
    """
    if bool(nginx_conf) == bool(ingress_nginx):
        raise InputError("give --nginx-conf FILE or --ingress-nginx CONFIGMAP, one of them")
    if ingress_nginx and (server or location):
        raise InputError("--server and --location pick from an nginx.conf, not a ConfigMap")
    path = nginx_conf or ingress_nginx
    return _read(path, bool(ingress_nginx), server, location, _signature(path))


@functools.lru_cache(maxsize=8)
def _read(
    path: str, ingress: bool, server: str, location: str, signature: tuple[int, int]
) -> Reading:
    if ingress:
        from sizing.workload.conf.ingress import derive_ingress

        return derive_ingress(path)
    from sizing.workload.conf.derive import derive
    from sizing.workload.conf.load import load

    return derive(load(path), server or None, location or None)


def apply(work: Workload, reading: Reading, given: set[str]) -> Workload:
    """``work`` with the values the configuration gives, except the fields in ``given``.

    The features and the directives not costed are the configuration's.
    """
    values: dict[str, Any] = {k: v for k, v in reading.found.values.items() if k not in given}
    return dataclasses.replace(
        work, **values, features=reading.workload.features, uncosted=reading.workload.uncosted
    )
