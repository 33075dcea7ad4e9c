"""``python -m sizing k8s`` (and ``recommend --format k8s``): manifests from a sizing request."""

from __future__ import annotations

import argparse
import sys

from sizing.request import SizingRequest, add_arguments
from trialtable.pathargs import OUTPUT_FILE, path_arg
from trialtable.values import Subcommands

#: Largest value of a Kubernetes int32 field (``maxReplicas``, ``replicas``).
INT32_MAX = 2**31 - 1

HELP = "Kubernetes manifests and the cheapest node type"


def add_k8s_options(p: argparse.ArgumentParser) -> None:
    """Pod size, names and output of the Kubernetes answer (not part of a sizing request)."""
    from sizing.request import int_between

    g = p.add_argument_group("Kubernetes (k8s, --format k8s)")
    g.add_argument("--pod-cpus", type=int_between(1, 64), default=2, help="CPUs (workers) per pod")
    g.add_argument("--name", default="nginx", help="Deployment name (an RFC 1123 label)")
    g.add_argument("--namespace", default=None, help="namespace (an RFC 1123 label)")
    g.add_argument("--image", default="nginx:1.27", help="container image")
    g.add_argument(
        "--max-replicas",
        type=int_between(1, INT32_MAX),
        default=None,
        help="HPA ceiling (a Kubernetes int32)",
    )
    g.add_argument(
        "--out", type=path_arg(OUTPUT_FILE), default=None, metavar="FILE", help="write YAML here"
    )


def add_parser(sub: Subcommands) -> None:
    """The ``k8s`` options: the request's flags and the pods'."""
    p = sub.add_parser("k8s", help=HELP)
    add_arguments(p, "k8s")
    add_k8s_options(p)


def run(args: argparse.Namespace) -> int:
    """Write Kubernetes manifests for the request, on the node type that packs them cheapest."""
    from sizing.analyses.k8s import Pod, PodBasis, check_image, check_name, k8s_answer
    from sizing.pipeline import size
    from trialtable.files import write_atomic
    from trialtable.read import read_rows

    check_name(args.name, "--name")
    if args.namespace is not None:
        check_name(args.namespace, "--namespace")
    check_image(args.image)
    request = SizingRequest.from_args(args)
    answer = size(request)
    if answer.warning:
        print(f"python -m sizing k8s: {answer.warning}", file=sys.stderr)
    rec = answer.recommendation
    rows = [r for d in request.runs for r in read_rows(d)]
    doc = k8s_answer(
        request.rps,
        list(answer.instances),
        rec.workload,
        rec.rules,
        Pod(args.pod_cpus, args.name, args.namespace, args.image, args.max_replicas),
        PodBasis(rec.evidence, rec.profiles, rows, rec.traffic),
    )
    if args.out:
        write_atomic(args.out, doc["yaml"])
        print("\n".join(doc["comments"][:5]))
    else:
        print(doc["yaml"], end="")
    return 0
