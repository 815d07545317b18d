"""Deploy preflight: can this runner reach the stack's EKS API endpoint? Run before any `pulumi` command.

Without it a runner outside `publicAccessCidrs` only learns so after pulumi-eks has waited 5 minutes
on `/healthz` and every Kubernetes resource has failed. Two ways in, checked in under a minute:
- public: the endpoint is public and the runner's egress IP lies in `cluster.publicAccessCidrs`;
- private: the cluster exists, its endpoint name resolves to private addresses (only inside the VPC,
  or a network peered/attached to it) and a TCP connection to port 443 succeeds.
On a first deploy the cluster does not exist yet: only the public check can pass.

    python preflight.py --stack staging    # exit 0 reachable, 1 not (the message names what to change)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ipaddress
import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from components.settings import SettingsError, StackSettings, load_settings
from offline.config_files import StackFileError, read_stack_config

PROJECT_DIR = Path(__file__).resolve().parent
# Answers with the caller's public IP as plain text (an AWS-run service, reachable from every region).
EGRESS_IP_URL = "https://checkip.amazonaws.com"
RUNNER_VARIABLE = "DEPLOY_RUNNER"
CIDRS_KEY = "gpu-platform:cluster.publicAccessCidrs"
PUBLIC_ACCESS_KEY = "gpu-platform:cluster.endpointPublicAccess"
# Each network step gets a few seconds, so the whole check ends well inside a minute.
STEP_TIMEOUT_SECONDS = 8
HTTPS_PORT = 443

Resolver = Callable[[str], Sequence[str]]
Connector = Callable[[str, int], bool]


@dataclass(frozen=True)
class Verdict:
    reachable: bool
    message: str


def egress_in_cidrs(egress_ip: str | None, cidrs: Sequence[str]) -> bool:
    if egress_ip is None:
        return False
    address = ipaddress.ip_address(egress_ip)
    return any(address in ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _fix_hint(settings: StackSettings, stack: str, egress_ip: str | None) -> str:
    cidr = f"{egress_ip}/32" if egress_ip else "this runner's egress CIDR"
    public = (
        f"add {cidr} to {CIDRS_KEY} in Pulumi.{stack}.yaml (a fixed-egress runner: larger GitHub runner with a "
        "static IP, or a self-hosted runner behind a NAT gateway)"
        if settings.cluster.endpoint_public_access
        else f"set {PUBLIC_ACCESS_KEY}: true with {CIDRS_KEY} holding {cidr}"
    )
    return (
        f"To fix: {public}; or set the repository variable {RUNNER_VARIABLE} to the label of a self-hosted runner "
        f"inside the cluster VPC ({settings.network.vpc_cidr}) or a network routed to it (private endpoint)."
    )


def decide(
    settings: StackSettings,
    stack: str,
    egress_ip: str | None,
    endpoint: str | None,
    resolve: Resolver,
    connect: Connector,
) -> Verdict:
    """Whether a runner with `egress_ip` reaches the cluster `endpoint` (None: the cluster does not exist yet)."""
    public_ok = settings.cluster.endpoint_public_access and egress_in_cidrs(
        egress_ip, settings.cluster.public_access_cidrs
    )
    shown_ip = egress_ip or "unknown"
    if public_ok:
        return Verdict(True, f"egress IP {shown_ip} is inside {CIDRS_KEY}: the public endpoint accepts this runner")
    why_public = (
        f"egress IP {shown_ip} is outside {CIDRS_KEY} {settings.cluster.public_access_cidrs}"
        if settings.cluster.endpoint_public_access
        else f"the public endpoint is off ({PUBLIC_ACCESS_KEY}: false)"
    )
    if endpoint is None:
        return Verdict(
            False,
            f"first deploy of cluster {settings.cluster_name} (it does not exist yet): only the public endpoint can "
            f"be used, and {why_public}. {_fix_hint(settings, stack, egress_ip)}",
        )
    host = endpoint.removeprefix("https://").split("/", 1)[0]
    addresses = list(resolve(host))
    private = [a for a in addresses if ipaddress.ip_address(a).is_private]
    if private and connect(host, HTTPS_PORT):
        return Verdict(True, f"{host} resolves to private {private} and accepts TCP {HTTPS_PORT}: in-VPC runner")
    why_private = (
        f"{host} resolves to private {private} but TCP {HTTPS_PORT} does not connect"
        if private
        else f"{host} resolves to {addresses or 'nothing'}, no private address: this runner is not in the VPC"
    )
    return Verdict(False, f"{why_public}, and {why_private}. {_fix_hint(settings, stack, egress_ip)}")


# --- the real probes (not unit-tested: network) ------------------------------------------------------


def fetch_egress_ip() -> str | None:
    try:
        with urllib.request.urlopen(EGRESS_IP_URL, timeout=STEP_TIMEOUT_SECONDS) as response:
            text = response.read(64).decode("ascii").strip()
        return str(ipaddress.ip_address(text))
    except (OSError, ValueError):
        return None


def describe_endpoint(cluster_name: str, region: str) -> str | None:
    """The cluster's API endpoint, None when EKS has no such cluster (first deploy)."""
    result = subprocess.run(
        ["aws", "eks", "describe-cluster", "--name", cluster_name, "--region", region, "--output", "json"],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_SECONDS * 2,
        check=False,
    )
    if result.returncode != 0:
        if "ResourceNotFoundException" in result.stderr:
            return None
        raise RuntimeError(f"aws eks describe-cluster failed: {result.stderr.strip()}")
    endpoint = json.loads(result.stdout)["cluster"].get("endpoint")
    return str(endpoint) if endpoint else None


def resolve_host(host: str) -> list[str]:
    # getaddrinfo has no timeout of its own: bound it with a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(socket.getaddrinfo, host, HTTPS_PORT, type=socket.SOCK_STREAM)
        try:
            infos = future.result(timeout=STEP_TIMEOUT_SECONDS)
        except (OSError, concurrent.futures.TimeoutError):
            return []
    return sorted({str(info[4][0]) for info in infos})


def tcp_connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=STEP_TIMEOUT_SECONDS):
            return True
    except OSError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    args = parser.parse_args(argv)
    try:
        settings = load_settings(read_stack_config(PROJECT_DIR, args.stack).values)
    except (StackFileError, SettingsError) as exc:
        print(f"preflight: {exc}", file=sys.stderr)
        return 2
    try:
        endpoint = describe_endpoint(settings.cluster_name, settings.region)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"preflight: cannot ask EKS for cluster {settings.cluster_name}: {exc}", file=sys.stderr)
        return 1
    verdict = decide(settings, args.stack, fetch_egress_ip(), endpoint, resolve_host, tcp_connects)
    print(f"preflight {args.stack}: {'ok' if verdict.reachable else 'UNREACHABLE'}: {verdict.message}")
    return 0 if verdict.reachable else 1


if __name__ == "__main__":
    sys.exit(main())
