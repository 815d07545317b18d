"""Deploy preflight: ask AWS what only AWS knows, before any `pulumi` command (both workflows run it).

    python preflight.py --stack STACK [--check reach,addons,addon-config,quotas,caller,prices]    (default: all but prices)

Every check says what it asked (the AWS CLI command) and what it got; exit 0 when all pass, 1 naming what
to change, 2 on an invalid stack file. A missing AWS CLI or one without valid credentials is a clear error.
- reach: can this runner reach the stack's EKS API endpoint? Two ways in, checked in under a minute:
  private first (the cluster exists, its endpoint name resolves to private addresses, RFC 1918 or the
  100.64.0.0/10 shared space, and TCP 443 connects: inside the VPC or a network routed to it; a runner
  there talks to the private address, so an egress IP inside `publicAccessCidrs` does not help it), then
  public (the endpoint is public and the runner's egress IP lies in `cluster.publicAccessCidrs`). On a
  first deploy the cluster does not exist yet: only the public path can pass. Without this a runner outside
  both only learns so after pulumi-eks has waited 5 minutes on `/healthz` and every Kubernetes resource failed.
- addons: every EKS add-on the stack pins must be listed by `aws eks describe-addon-versions` for its
  Kubernetes version.
- addon-config: every add-on the stack gives `configurationValues` must accept them: validated against the
  JSON schema `aws eks describe-addon-configuration` returns for the pinned version (`configurationSchema`),
  the one `CreateAddon` applies (an unknown key fails it with InvalidParameterException).
- quotas: every EC2 vCPU quota the synth summary lists (`ResolvedStack.quota_needs`) must allow what
  the stack's GPU pools can use (`aws service-quotas get-service-quota`).
- caller: on a first deploy, EKS makes the caller (`aws sts get-caller-identity`) cluster admin through the
  creator entry; if the caller is not `cluster.deployerPrincipalArn` but is listed as admin, viewer or lab
  member, the listed entry would collide with the creator's (409). Once the cluster exists that is fine.
- prices (asked for, not by default: a price change never blocks a deploy): the pinned price table against
  `aws pricing get-products`, failing on a drift over 5% (preflight_prices.py, docs/cost.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ipaddress
import json
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from components.facts import constants
from components.renderers.access import access_entries
from components.renderers.hub import hub_database
from components.renderers.observability.observability_config import (
    cloudwatch_observability_configuration,
    node_monitoring_agent_configuration,
)
from components.settings import SettingsError, StackSettings, load_settings
from offline.config_files import StackFileError, read_stack_config
from preflight_prices import PRICING_REGION, check_prices

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


# Carrier-grade NAT / shared address space (RFC 6598): VPCs may use it, and Python's `is_private` says False.
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")


def is_private_address(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_private or (ip.version == 4 and ip in SHARED_ADDRESS_SPACE)


def decide(
    settings: StackSettings,
    stack: str,
    egress_ip: str | None,
    endpoint: str | None,
    resolve: Resolver,
    connect: Connector,
) -> Verdict:
    """Whether a runner with `egress_ip` reaches the cluster `endpoint` (None: the cluster does not exist yet).

    The private path comes first: where the endpoint name resolves to private addresses, clients use them,
    so only a TCP connection decides (an egress IP inside publicAccessCidrs does not help such a runner)."""
    shown_ip = egress_ip or "unknown"
    public_ok = settings.cluster.endpoint_public_access and egress_in_cidrs(
        egress_ip, settings.cluster.public_access_cidrs
    )
    why_public = (
        f"egress IP {shown_ip} is outside {CIDRS_KEY} {settings.cluster.public_access_cidrs}"
        if settings.cluster.endpoint_public_access
        else f"the public endpoint is off ({PUBLIC_ACCESS_KEY}: false)"
    )
    if endpoint is None:
        if public_ok:
            return Verdict(True, f"egress IP {shown_ip} is inside {CIDRS_KEY}: the public endpoint accepts this runner")
        return Verdict(
            False,
            f"first deploy of cluster {settings.cluster_name} (it does not exist yet): only the public endpoint can "
            f"be used, and {why_public}. {_fix_hint(settings, stack, egress_ip)}",
        )
    host = endpoint.removeprefix("https://").split("/", 1)[0]
    addresses = list(resolve(host))
    private = [a for a in addresses if is_private_address(a)]
    if private:
        if connect(host, HTTPS_PORT):
            return Verdict(True, f"{host} resolves to private {private} and accepts TCP {HTTPS_PORT}: in-VPC runner")
        return Verdict(
            False,
            f"{host} resolves to private {private} (this runner is inside the VPC or a network routed to it, so it "
            f"uses the private endpoint) but TCP {HTTPS_PORT} does not connect: allow this runner in the cluster "
            f"security group (HTTPS from its subnet). {_fix_hint(settings, stack, egress_ip)}",
        )
    if public_ok:
        return Verdict(True, f"egress IP {shown_ip} is inside {CIDRS_KEY}: the public endpoint accepts this runner")
    why_private = f"{host} resolves to {addresses or 'nothing'}, no private address: this runner is not in the VPC"
    return Verdict(False, f"{why_public}, and {why_private}. {_fix_hint(settings, stack, egress_ip)}")


# --- the real probes (not unit-tested: network) ------------------------------------------------------


def fetch_egress_ip() -> str | None:
    try:
        with urllib.request.urlopen(EGRESS_IP_URL, timeout=STEP_TIMEOUT_SECONDS) as response:
            text = response.read(64).decode("ascii").strip()
        return str(ipaddress.ip_address(text))
    except (OSError, ValueError):
        return None


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


# --- asking AWS: the AWS CLI ---------------------------------------------------------------------------


class AwsCliError(Exception):
    """The AWS CLI is missing, has no valid credentials, or failed: the message says which and what to do."""


CREDENTIAL_ERRORS = (
    "Unable to locate credentials",
    "ExpiredToken",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "UnrecognizedClientException",
    "AccessDenied",
)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    asked: str
    got: str
    message: str


class Aws:
    """Runs `aws ... --output json` for one region; every command it ran is kept for the report."""

    def __init__(self, region: str, executable: str = "aws"):
        self.region = region
        self.executable = executable

    def command(self, *args: str) -> str:
        return " ".join([self.executable, *args, "--region", self.region])

    def run(self, *args: str, not_found: str | None = None) -> dict[str, Any] | None:
        """The JSON answer; None when stderr names `not_found` (e.g. ResourceNotFoundException)."""
        argv = [self.executable, *args, "--region", self.region, "--output", "json"]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_SECONDS * 2, check=False)
        except FileNotFoundError:
            raise AwsCliError(
                f"the AWS CLI (`{self.executable}`) is not on PATH: install AWS CLI v2 "
                "(https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html)"
            ) from None
        except subprocess.TimeoutExpired:
            raise AwsCliError(f"`{self.command(*args)}` did not answer within {STEP_TIMEOUT_SECONDS * 2}s") from None
        if result.returncode != 0:
            stderr = result.stderr.strip()
            if not_found is not None and not_found in stderr:
                return None
            if any(marker in stderr for marker in CREDENTIAL_ERRORS):
                raise AwsCliError(
                    f"the AWS CLI has no valid credentials for `{self.command(*args)}`: {stderr} (configure them, "
                    "e.g. aws-actions/configure-aws-credentials in the workflow, or `aws sso login` locally)"
                )
            raise AwsCliError(f"`{self.command(*args)}` failed (exit {result.returncode}): {stderr}")
        try:
            answer = json.loads(result.stdout or "{}")
        except json.JSONDecodeError:
            raise AwsCliError(f"`{self.command(*args)}` answered no JSON: {result.stdout[:200]!r}") from None
        return answer if isinstance(answer, dict) else {}


def describe_endpoint(aws: Aws, cluster_name: str) -> str | None:
    """The cluster's API endpoint, None when EKS has no such cluster (first deploy)."""
    answer = aws.run("eks", "describe-cluster", "--name", cluster_name, not_found="ResourceNotFoundException")
    if answer is None:
        return None
    cluster = answer.get("cluster")
    endpoint = cluster.get("endpoint") if isinstance(cluster, dict) else None
    return str(endpoint) if endpoint else None


def pinned_addons(settings: StackSettings) -> list[tuple[str, str]]:
    """(add-on name, version) of every EKS add-on the stack pins (components/observability.py and
    components/hub.py create them); the others (pod identity agent, CoreDNS, kube-proxy, VPC CNI) take EKS's
    default version. tests/preflight/test_preflight_aws.py holds this list against the add-ons each synth plan creates."""
    pinned = []
    if settings.observability.node_repair:
        pinned.append((constants.NODE_MONITORING_AGENT_ADDON, constants.NODE_MONITORING_AGENT_ADDON_VERSION))
    if settings.observability.gpu_metrics:
        pinned.append((constants.CLOUDWATCH_OBSERVABILITY_ADDON, constants.CLOUDWATCH_OBSERVABILITY_ADDON_VERSION))
    if any(lab.hub is not None for lab in settings.labs):
        pinned.append((constants.EFS_CSI_ADDON, constants.EFS_CSI_ADDON_VERSION))
    if hub_database.needs_block_volumes(settings.labs):
        pinned.append((constants.EBS_CSI_ADDON, constants.EBS_CSI_ADDON_VERSION))
    return pinned


def check_addons(aws: Aws, settings: StackSettings) -> list[CheckResult]:
    results = []
    for addon, version in pinned_addons(settings):
        args = (
            "eks", "describe-addon-versions", "--addon-name", addon, "--kubernetes-version", settings.kubernetes_version,
        )  # fmt: skip
        answer = aws.run(*args) or {}
        addons = answer.get("addons") or []
        available = sorted(
            {
                str(v.get("addonVersion"))
                for a in addons
                if isinstance(a, dict) and a.get("addonName") == addon
                for v in a.get("addonVersions", [])
                if isinstance(v, dict)
            }
        )
        ok = version in available
        message = (
            f"{addon} {version} is published for Kubernetes {settings.kubernetes_version}"
            if ok
            else f"{addon} {version} is not published for Kubernetes {settings.kubernetes_version} in {aws.region}; "
            f"versions that exist: {', '.join(available) or 'none'}. Change the pin in components/facts/constants.py"
        )
        results.append(CheckResult("addons", ok, aws.command(*args), ", ".join(available) or "no versions", message))
    return results


def configured_addons(settings: StackSettings) -> list[tuple[str, str, dict[str, Any]]]:
    """(add-on name, version, configurationValues) of every EKS add-on the stack configures, from the renderers
    components/observability.py hands them to; tests/preflight/test_preflight_addon_config.py holds this list against
    the `configurationValues` of every add-on in each synth plan."""
    configured = []
    if settings.observability.node_repair:
        configured.append(
            (
                constants.NODE_MONITORING_AGENT_ADDON,
                constants.NODE_MONITORING_AGENT_ADDON_VERSION,
                node_monitoring_agent_configuration(),
            )
        )
    if settings.observability.gpu_metrics:
        configured.append(
            (
                constants.CLOUDWATCH_OBSERVABILITY_ADDON,
                constants.CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
                cloudwatch_observability_configuration(),
            )
        )
    return configured


def schema_complaints(values: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """`key: complaint` for every way `values` breaks `schema` (its own `$schema` draft; draft 7 if unnamed).

    An unknown key is reported at its own path (`dcgmExporter.bogus`), not at the object holding it."""
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    complaints = []
    for error in sorted(validator_class(schema).iter_errors(values), key=lambda e: [str(p) for p in e.path]):
        path = [str(part) for part in error.absolute_path]
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            patterns = error.schema.get("patternProperties", {}) if isinstance(error.schema, dict) else {}
            unknown = [k for k in error.instance if k not in known and not any(re.search(p, k) for p in patterns)]
            complaints += [f"{'.'.join([*path, key])}: {error.message}" for key in unknown]
            continue
        complaints.append(f"{'.'.join(path) or '<root>'}: {error.message}")
    return complaints


def check_addon_config(aws: Aws, settings: StackSettings) -> list[CheckResult]:
    results = []
    for addon, version, values in configured_addons(settings):
        args = ("eks", "describe-addon-configuration", "--addon-name", addon, "--addon-version", version)
        answer = aws.run(*args) or {}
        text = answer.get("configurationSchema")
        try:
            schema = json.loads(text) if isinstance(text, str) and text.strip() else None
        except json.JSONDecodeError as exc:
            raise AwsCliError(f"`{aws.command(*args)}` answered a configurationSchema that is no JSON: {exc}") from None
        if not isinstance(schema, dict):
            complaints = ["<root>: the add-on publishes no configuration schema, so it accepts no configurationValues"]
        else:
            complaints = schema_complaints(values, schema)
        got = f"configurationSchema of {len(text or '')} characters" if schema else "no configurationSchema"
        message = (
            f"{addon} {version} accepts its configurationValues ({', '.join(sorted(values))})"
            if not complaints
            else f"{addon} {version} rejects its configurationValues (CreateAddon would fail with "
            f"InvalidParameterException): {'; '.join(complaints)}. Change them in "
            "components/renderers/observability/observability_config.py, or the pin in components/facts/constants.py"
        )
        results.append(CheckResult("addon-config", not complaints, aws.command(*args), got, message))
    return results


def check_quotas(aws: Aws, settings: StackSettings) -> list[CheckResult]:
    results = []
    for need in settings.resolved.quota_needs:
        args = ("service-quotas", "get-service-quota", "--service-code", "ec2", "--quota-code", need.code)
        answer = aws.run(*args) or {}
        quota = answer.get("Quota") or {}
        value = float(quota.get("Value", 0))
        ok = value >= need.vcpus
        shown = f"{value:g}"
        message = (
            f"{need.code} ({need.name}) allows {shown} vCPUs; the stack can use {need.vcpus}"
            if ok
            else f"{need.code} ({need.name}) allows {shown} vCPUs, below the {need.vcpus} the stack's GPU pools can "
            f"use; request more: aws service-quotas request-service-quota-increase --service-code ec2 "
            f"--quota-code {need.code} --desired-value {need.vcpus} --region {aws.region} (or lower the pools' limits)"
        )
        results.append(CheckResult("quotas", ok, aws.command(*args), f"Value {shown}", message))
    return results


def role_arn_of(caller_arn: str) -> str:
    """`arn:aws:sts::A:assumed-role/NAME/SESSION` -> `arn:aws:iam::A:role/NAME`; other ARNs unchanged."""
    prefix, _, resource = caller_arn.partition(":assumed-role/")
    if not resource:
        return caller_arn
    partition_and_account = prefix.removeprefix("arn:").split(":sts:", 1)
    partition, account = partition_and_account[0], partition_and_account[-1].strip(":")
    return f"arn:{partition}:iam::{account}:role/{resource.split('/', 1)[0]}"


def _same_principal(caller: str, configured: str) -> bool:
    """STS drops a role's path: compare account, kind and name (the last path segment)."""

    def key(arn: str) -> tuple[str, str, str]:
        resource = arn.partition(":iam::")[2]
        account, _, path = resource.partition(":")
        kind, _, name = path.partition("/")
        return account, kind, name.rsplit("/", 1)[-1]

    return key(caller) == key(configured)


def listed_keys(settings: StackSettings, principal: str) -> list[str]:
    """Every config key path listing `principal` as admin, viewer or lab member."""
    keys = [
        f"{access_entries.ADMIN_KEY}[{i}]"
        for i, arn in enumerate(settings.cluster.admin_principal_arns)
        if _same_principal(principal, arn)
    ]
    keys += [
        f"{access_entries.VIEWER_KEY}[{i}]"
        for i, arn in enumerate(settings.cluster.viewer_principal_arns)
        if _same_principal(principal, arn)
    ]
    for lab_index, lab in enumerate(settings.labs):
        keys += [
            f"gpu-platform:labs[{lab_index}].members[{i}]"
            for i, arn in enumerate(lab.members)
            if _same_principal(principal, arn)
        ]
    return keys


def check_caller(aws: Aws, settings: StackSettings, cluster_exists: bool) -> CheckResult:
    answer = aws.run("sts", "get-caller-identity") or {}
    caller = role_arn_of(str(answer.get("Arn", "")))
    asked = aws.command("sts", "get-caller-identity")
    deployer = settings.cluster.deployer_principal_arn
    if cluster_exists:
        return CheckResult(
            "caller", True, asked, caller,
            f"cluster {settings.cluster_name} exists: its creator entry is made, so {caller} running `pulumi up` "
            "collides with nothing",
        )  # fmt: skip
    if deployer is not None and _same_principal(caller, deployer):
        return CheckResult("caller", True, asked, caller, f"first deploy by {access_entries.DEPLOYER_KEY} ({caller})")
    listed = listed_keys(settings, caller)
    if listed:
        return CheckResult(
            "caller", False, asked, caller,
            f"first deploy: EKS will make the caller {caller} cluster admin through the creator entry, and "
            f"{', '.join(listed)} lists it too: its access entry would collide (409 ResourceInUseException). "
            f"Run the first `up` as {access_entries.DEPLOYER_KEY} ({deployer or 'unset'}), or set that key to "
            f"{caller} and remove it from {', '.join(listed)}",
        )  # fmt: skip
    return CheckResult(
        "caller", True, asked, caller,
        f"first deploy: EKS will make {caller} cluster admin (creator entry); {access_entries.DEPLOYER_KEY} is "
        f"{deployer or 'unset'}: set it to {caller} so the stack records who that is",
    )  # fmt: skip


def check_reach(aws: Aws, settings: StackSettings, stack: str, endpoint: str | None) -> CheckResult:
    verdict = decide(settings, stack, fetch_egress_ip(), endpoint, resolve_host, tcp_connects)
    got = endpoint or "no cluster yet (ResourceNotFoundException)"
    return CheckResult("reach", verdict.reachable, aws.command("eks", "describe-cluster"), got, verdict.message)


CHECKS = ("reach", "addons", "addon-config", "quotas", "caller", "prices")
DEFAULT_CHECKS = ("reach", "addons", "addon-config", "quotas", "caller")


def _checks(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CHECKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown check(s) {unknown or [text]}; allowed: {','.join(CHECKS)}")
    return names


def run_checks(settings: StackSettings, stack: str, checks: Sequence[str], aws: Aws) -> list[CheckResult]:
    # Credentials first: every other question needs them, and a bad login is then one clear error.
    aws.run("sts", "get-caller-identity")
    results: list[CheckResult] = []
    endpoint = describe_endpoint(aws, settings.cluster_name) if {"reach", "caller"}.intersection(checks) else None
    for check in checks:
        if check == "reach":
            results.append(check_reach(aws, settings, stack, endpoint))
        elif check == "addons":
            results += check_addons(aws, settings)
        elif check == "addon-config":
            results += check_addon_config(aws, settings)
        elif check == "quotas":
            results += check_quotas(aws, settings)
        elif check == "caller":
            results.append(check_caller(aws, settings, cluster_exists=endpoint is not None))
        elif check == "prices":
            pricing = Aws(PRICING_REGION, aws.executable)
            results += [
                CheckResult("prices", r.ok, r.asked, r.got, r.message)
                for r in check_prices(pricing.run, pricing.command, settings)
            ]
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument(
        "--check",
        type=_checks,
        default=list(DEFAULT_CHECKS),
        help=f"comma-separated: {','.join(CHECKS)} (default: {','.join(DEFAULT_CHECKS)})",
    )
    args = parser.parse_args(argv)
    try:
        settings = load_settings(read_stack_config(PROJECT_DIR, args.stack).values)
    except (StackFileError, SettingsError) as exc:
        print(f"preflight: {exc}", file=sys.stderr)
        return 2
    try:
        results = run_checks(settings, args.stack, args.check, Aws(settings.region))
    except AwsCliError as exc:
        print(f"preflight {args.stack}: FAILED: {exc}", file=sys.stderr)
        return 1
    for result in results:
        print(f"preflight {args.stack} {result.name}: {'ok' if result.ok else 'FAILED'}: {result.message}")
        print(f"  asked: {result.asked}")
        print(f"  got:   {result.got}")
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
