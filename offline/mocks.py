"""Pulumi mocks that record every registration the way the engine would see it.

- `RecordingMonitor` builds engine-form URNs, turns off resource references (pulumi-eks remote
  components otherwise hang or hit "Future attached to a different loop" under mocks, see
  docs/testing-with-mocks.md) and records type, name, parent, dependencies, protect and the
  raw inputs of each registration.
- `PlatformMocks` answers the invokes the program makes and returns the outputs it reads, with
  values that are obviously placeholders (account 000000000000, ids `<name>-id`).
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import resource_pb2

from components.facts.constants import HELM_CHART_TYPE

PLACEHOLDER_ACCOUNT = "000000000000"
SECRET = "[secret]"
UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"

_SIG = rpc._special_sig_key
_SIGNATURES = {
    rpc._special_secret_sig: "secret",
    rpc._special_resource_sig: "resource",
    rpc._special_asset_sig: "asset",
    rpc._special_archive_sig: "archive",
    rpc._special_output_value_sig: "output",
}


def plain_json(value: Any) -> Any:
    """Make a protobuf-decoded property JSON-natural: secrets redacted, whole floats as ints, keys sorted."""
    if isinstance(value, dict):
        kind = _SIGNATURES.get(value.get(_SIG, ""))
        if kind == "secret":
            return SECRET
        if kind == "resource":
            return value.get("id") or value.get("urn")
        if kind == "output":
            return SECRET if value.get("secret") else plain_json(value.get("value", UNKNOWN))
        if kind in ("asset", "archive"):
            return {k: plain_json(v) for k, v in sorted(value.items()) if k != _SIG}
        return {k: plain_json(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [plain_json(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if value == rpc.UNKNOWN:
        return UNKNOWN
    return value


# What `ec2:DescribeAvailabilityZones` answers in an account that opted in to a Local Zone: the Local
# Zone (`<region>-lax-1a`, opt-in-status "opted-in") sorts before the region's own zones, so a
# program that does not filter on `opt-in-status` would put its first subnets there.
_MOCK_ZONES = (
    ("-lax-1a", "local-zone", "opted-in"),
    *((suffix, "availability-zone", "opt-in-not-required") for suffix in "abcd"),
)


def availability_zones(region: str, invoke_args: dict[str, Any]) -> dict[str, Any]:
    """`aws.get_availability_zones` as AWS answers it, honouring the `opt-in-status`/`zone-type` filters."""
    zones = [(f"{region}{suffix}", zone_type, opt_in) for suffix, zone_type, opt_in in _MOCK_ZONES]
    for condition in invoke_args.get("filters") or []:
        column = {"opt-in-status": 2, "zone-type": 1}.get(condition["name"])
        if column is None:
            raise NotImplementedError(f"offline mocks do not filter availability zones by {condition['name']}")
        zones = [zone for zone in zones if zone[column] in condition["values"]]
    names = sorted(zone[0] for zone in zones)
    return {"names": names, "zoneIds": [f"placeholder-az{i}" for i in range(len(names))], "id": region}


@dataclass
class Registration:
    urn: str
    type: str
    name: str
    parent: str | None
    dependencies: list[str]
    protect: bool
    custom: bool
    remote: bool
    inputs: dict[str, Any]
    provider: str | None
    # Engine options that resources.json does not carry, for component tests.
    delete_before_replace: bool = False
    # Former URNs of this resource (`aliases` given as URNs): the engine adopts their state in place.
    aliases: list[str] = field(default_factory=list)


def _alias_urns(request: Any) -> list[str]:
    """The URN aliases of a registration, in either wire form (alias specs or plain alias URNs)."""
    urns = [alias.urn for alias in request.aliases if alias.urn]
    return sorted({*urns, *request.aliasURNs})


@dataclass
class _HiddenChild:
    """A resource inside a remote component, known only as an output reference."""

    urn: str
    owner_urn: str


class RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: PlatformMocks):
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.hidden: dict[str, str] = {}  # hidden child urn -> its remote component's urn
        self.current = threading.local()  # the registration being mocked, per executor thread
        mocks.monitor = self

    def GetDeploymentInfo(self, request: Any) -> Any:
        info = super().GetDeploymentInfo(request)
        features = [f for f in info.supportedFeatures if f != resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES]
        return resource_pb2.DeploymentInfo(supportedFeatures=features)

    def SupportsFeature(self, request: Any) -> Any:
        supported = request.id not in ("outputValues", "resourceReferences")
        return type("SupportsFeatureResponse", (object,), {"hasSupport": supported})

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine's form: the parent's full type chain joined by '$'; the Stack is not part of it.
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != STACK_TYPE:
                type_ = f"{parent_type}${type_}"
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), type_, name])

    def RegisterResource(self, request: Any) -> Any:
        self.current.urn = self.make_urn(request.parent, request.type, request.name)
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            return response
        parent = request.parent or None
        if parent and parent.split("::")[2] == STACK_TYPE:
            parent = None
        self.registrations.append(
            Registration(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=parent,
                dependencies=list(dict.fromkeys(request.dependencies)),
                protect=bool(request.protect),
                custom=bool(request.custom),
                remote=bool(request.remote),
                inputs=plain_json(json_format.MessageToDict(request.object)),
                provider=request.provider or None,
                delete_before_replace=bool(request.deleteBeforeReplace),
                aliases=_alias_urns(request),
            )
        )
        return response

    def add_hidden_child(
        self, owner_urn: str, type_: str, name: str, state: dict[str, Any], id_: str
    ) -> dict[str, Any]:
        """Register a remote component's child so its reference re-hydrates; returns the reference."""
        urn = self.make_urn(owner_urn, type_, name)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, state)
        self.hidden[urn] = owner_urn
        return {_SIG: rpc._special_resource_sig, "urn": urn, "id": id_}


@dataclass
class PlatformMocks(pulumi.runtime.Mocks):
    region: str
    stack: str
    project: str
    monitor: RecordingMonitor | None = field(default=None, repr=False)
    # The IAM role or user the mocked credentials belong to (None: an offline user in the placeholder
    # account). `accountId` stays the placeholder account either way, so the plan's ARNs stay offline.
    caller_principal_arn: str | None = None

    # --- invokes --------------------------------------------------------------------------
    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        token = args.token
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            arn = self._caller_arn()
            return {"accountId": PLACEHOLDER_ACCOUNT, "arn": arn, "userId": "OFFLINE", "id": PLACEHOLDER_ACCOUNT}, []
        if token == "aws:iam/getSessionContext:getSessionContext":
            return self._session_context(str(args.args["arn"])), []
        if token == "aws:index/getPartition:getPartition":
            return {
                "partition": "aws",
                "dnsSuffix": "amazonaws.com",
                "reverseDnsPrefix": "com.amazonaws",
                "id": "aws",
            }, []
        if token == "aws:index/getRegion:getRegion":
            return {"region": self.region, "name": self.region, "id": self.region}, []
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return availability_zones(self.region, dict(args.args)), []
        raise NotImplementedError(f"offline mocks do not answer invoke {token}; add it to offline/mocks.py")

    def _caller_arn(self) -> str:
        """What STS GetCallerIdentity reports: a role is seen through an assumed-role session ARN."""
        principal = self.caller_principal_arn or f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:user/offline-synth"
        head, _, resource = principal.partition(":iam::")
        account, _, path = resource.partition(":")
        if not path.startswith("role/"):
            return principal
        # The session ARN names the role without its path.
        return f"{head}:sts::{account}:assumed-role/{path.rsplit('/', 1)[-1]}/offline-synth"

    def _session_context(self, arn: str) -> dict[str, Any]:
        """aws.iam.getSessionContext: an assumed-role ARN -> its role's ARN; anything else passes through."""
        if ":assumed-role/" not in arn:
            return {"arn": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": "", "id": arn}
        head, _, rest = arn.partition(":sts::")
        account, _, session = rest.partition(":assumed-role/")
        role_name, _, session_name = session.partition("/")
        issuer = f"{head}:iam::{account}:role/{role_name}"
        if self.caller_principal_arn and self.caller_principal_arn.endswith(f"/{role_name}"):
            issuer = self.caller_principal_arn  # the real call looks the role up, path included
        return {
            "arn": arn,
            "issuerArn": issuer,
            "issuerId": "AROAOFFLINE",
            "issuerName": role_name,
            "sessionName": session_name,
            "id": arn,
        }

    # --- resources ------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "eks:index:Cluster":
            return "", self._eks_cluster(args)
        if args.typ == "eks:index:ManagedNodeGroup":
            return "", self._managed_node_group(args)
        if args.typ == HELM_CHART_TYPE:
            return "", {"resources": []}
        if not args.custom:
            return "", {}
        resource_id = f"{args.name}-id"
        return resource_id, {**args.inputs, **self._outputs(args.typ, args.name, args.inputs, resource_id)}

    def _arn(self, service: str, resource: str, *, regional: bool = True) -> str:
        region = self.region if regional else ""
        return f"arn:aws:{service}:{region}:{PLACEHOLDER_ACCOUNT}:{resource}"

    def _outputs(self, typ: str, name: str, inputs: dict[str, Any], resource_id: str) -> dict[str, Any]:
        physical = inputs.get("name") or name
        if typ == "aws:iam/role:Role":
            return {
                "arn": self._arn("iam", f"role/{physical}", regional=False),
                "name": physical,
                "uniqueId": "AROAOFFLINE",
            }
        if typ == "aws:iam/policy:Policy":
            return {"arn": self._arn("iam", f"policy/{physical}", regional=False), "name": physical}
        if typ == "aws:sqs/queue:Queue":
            url = f"https://sqs.{self.region}.amazonaws.com/{PLACEHOLDER_ACCOUNT}/{physical}"
            return {"arn": self._arn("sqs", physical), "name": physical, "url": url, "id": url}
        if typ == "aws:kms/key:Key":
            return {"arn": self._arn("kms", f"key/{resource_id}"), "keyId": resource_id}
        if typ == "aws:ec2/launchTemplate:LaunchTemplate":
            return {"arn": self._arn("ec2", f"launch-template/{resource_id}"), "latestVersion": 1, "defaultVersion": 1}
        if typ.startswith("aws:ec2/"):
            kind = typ.split("/")[1].split(":")[0]
            return {"arn": self._arn("ec2", f"{kind}/{resource_id}")}
        if typ == "aws:cloudwatch/eventRule:EventRule":
            return {"arn": self._arn("events", f"rule/{physical}"), "name": physical}
        if typ.startswith("aws:"):
            service = typ.split(":")[1].split("/")[0]
            return {"arn": self._arn(service, f"{name}/{resource_id}")}
        return {}

    def _owner_urn(self) -> str:
        """Urn of the registration being mocked (set by the monitor on this thread)."""
        assert self.monitor is not None
        return str(self.monitor.current.urn)

    def _eks_cluster(self, args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
        assert self.monitor is not None
        owner = self._owner_urn()
        name = args.inputs.get("name") or args.name
        endpoint = f"https://{name}.placeholder.eks.{self.region}.amazonaws.com"
        ca = "UExBQ0VIT0xERVItQ0EtREFUQQ=="  # base64 of "PLACEHOLDER-CA-DATA"
        eks_cluster = self.monitor.add_hidden_child(
            owner,
            "aws:eks/cluster:Cluster",
            f"{args.name}-eksCluster",
            {
                "name": name,
                "arn": self._arn("eks", f"cluster/{name}"),
                "endpoint": endpoint,
                "version": args.inputs.get("version"),
                "certificateAuthority": {"data": ca},
            },
            name,
        )
        # pulumi-eks creates one child per access entry, named `<component>-<key>`
        # (nodejs/eks/cluster/authenticationMode.ts createAccessEntries, v4.3.0).
        for key, entry in (args.inputs.get("accessEntries") or {}).items():
            self.monitor.add_hidden_child(
                owner, "aws:eks/accessEntry:AccessEntry", f"{args.name}-{key}", dict(entry), f"{name}:{key}"
            )
        # The cluster always has an OIDC issuer; the IAM OIDC provider exists only with createOidcProvider.
        oidc_url = f"oidc.eks.{self.region}.amazonaws.com/id/PLACEHOLDER"
        oidc_outputs: dict[str, Any] = {}
        core: dict[str, Any] = {"endpoint": endpoint}
        if args.inputs.get("createOidcProvider", True):
            oidc_arn = self._arn("iam", f"oidc-provider/{oidc_url}", regional=False)
            oidc = self.monitor.add_hidden_child(
                owner,
                "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
                f"{args.name}-oidcProvider",
                {"arn": oidc_arn, "url": oidc_url},
                oidc_arn,
            )
            oidc_outputs = {"oidcProviderArn": oidc_arn, "oidcProviderUrl": oidc_url}
            core["oidcProvider"] = oidc
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [{"name": name, "user": {"token": "placeholder-token"}}],
        }
        return {
            "eksCluster": eks_cluster,
            "core": core,
            "kubeconfig": kubeconfig,
            "kubeconfigJson": json.dumps(kubeconfig, sort_keys=True),
            **oidc_outputs,
            "oidcIssuer": f"https://{oidc_url}",
            "clusterSecurityGroupId": "sg-placeholdercluster",
            "nodeSecurityGroupId": "sg-placeholdernodes",
        }

    def _managed_node_group(self, args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
        assert self.monitor is not None
        owner = self._owner_urn()
        name = args.inputs.get("nodeGroupName") or args.name
        node_group = self.monitor.add_hidden_child(
            owner,
            "aws:eks/nodeGroup:NodeGroup",
            f"{args.name}-nodeGroup",
            {"nodeGroupName": name, "arn": self._arn("eks", f"nodegroup/{name}"), "status": "ACTIVE"},
            name,
        )
        return {"nodeGroup": node_group}
