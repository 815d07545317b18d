"""CloudWatch `PutMetricData` with the hub pod's EKS Pod Identity credentials, in the standard library only (the
hub image has no AWS SDK): the query API (`Action=PutMetricData&Version=2010-08-01`, form-encoded POST) signed
with Signature Version 4.

Pod Identity: the EKS Pod Identity webhook gives the pod `AWS_CONTAINER_CREDENTIALS_FULL_URI`
(`http://169.254.170.23/v1/credentials`) and `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`; a managed service does not
inherit them (JupyterHub's `env_keep`), so the chart's service `environment` passes the same fixed values.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

POD_IDENTITY_URI = "http://169.254.170.23/v1/credentials"
POD_IDENTITY_TOKEN_FILE = "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token"
TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None


@dataclass(frozen=True)
class Datum:
    name: str
    value: float
    unit: str
    dimensions: Mapping[str, str]


def pod_identity_credentials() -> Credentials:
    uri = os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI", POD_IDENTITY_URI)
    token_file = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", POD_IDENTITY_TOKEN_FILE)
    with open(token_file, encoding="utf-8") as handle:
        token = handle.read().strip()
    request = urllib.request.Request(uri, headers={"Authorization": token})
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
        answer = json.loads(response.read())
    return Credentials(answer["AccessKeyId"], answer["SecretAccessKey"], answer.get("Token"))


def put_metric_data_body(namespace: str, data: Sequence[Datum]) -> str:
    """The form body of a PutMetricData query request."""
    fields = [("Action", "PutMetricData"), ("Version", "2010-08-01"), ("Namespace", namespace)]
    for index, datum in enumerate(data, start=1):
        prefix = f"MetricData.member.{index}"
        fields += [(f"{prefix}.MetricName", datum.name), (f"{prefix}.Value", repr(float(datum.value))),
                   (f"{prefix}.Unit", datum.unit)]  # fmt: skip
        for number, (key, value) in enumerate(sorted(datum.dimensions.items()), start=1):
            fields += [(f"{prefix}.Dimensions.member.{number}.Name", key),
                       (f"{prefix}.Dimensions.member.{number}.Value", value)]  # fmt: skip
    return urllib.parse.urlencode(fields)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed_headers(
    credentials: Credentials, region: str, host: str, body: str, now: datetime.datetime
) -> dict[str, str]:
    """SigV4 headers for `POST https://<host>/` with a form `body` (service `monitoring`)."""
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8", "host": host, "x-amz-date": stamp}
    if credentials.token:
        headers["x-amz-security-token"] = credentials.token
    names = ";".join(sorted(headers))
    canonical = "\n".join(
        ["POST", "/", "", *(f"{key}:{headers[key]}" for key in sorted(headers)), "", names,
         hashlib.sha256(body.encode()).hexdigest()]
    )  # fmt: skip
    scope = f"{day}/{region}/monitoring/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(
        _hmac(_hmac(_hmac(f"AWS4{credentials.secret_key}".encode(), day), region), "monitoring"), "aws4_request"
    )
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return headers


def put_metric_data(region: str, namespace: str, data: Sequence[Datum]) -> None:
    host = f"monitoring.{region}.amazonaws.com"
    body = put_metric_data_body(namespace, data)
    now = datetime.datetime.now(datetime.UTC)
    headers = signed_headers(pod_identity_credentials(), region, host, body, now)
    request = urllib.request.Request(f"https://{host}/", data=body.encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS):
        pass
