"""The GPU idle reaper's CloudWatch path (gpu_reaper/cloudwatch.py, renderers/hub/hub_gpu_idle_metrics): the request
equals what botocore itself would send (its query serializer and its SigV4 signer), the role may only put metrics
into the reaper's namespace, and the window's numbers go out per lab and per cluster."""

from __future__ import annotations

import datetime
import urllib.parse
from unittest import mock

import botocore.session
from botocore import serialize
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotocoreCredentials

from components.renderers.hub import hub_gpu_idle_metrics
from gpu_reaper import cloudwatch
from gpu_reaper.service import reclaimed_hours, window_metrics
from gpu_reaper.users import Learner

NOW = datetime.datetime(2026, 1, 1, 9, 0, 0, tzinfo=datetime.UTC)
CREDENTIALS = cloudwatch.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
DATA = window_metrics("gpu-staging", "learning-lab", 1.5, 2)


def test_the_body_is_botocores_query_serialization_of_put_metric_data() -> None:
    model = botocore.session.get_session().get_service_model("cloudwatch")
    assert "query" in model.metadata["protocols"]
    params = {
        "Namespace": hub_gpu_idle_metrics.METRICS_NAMESPACE,
        "MetricData": [
            {"MetricName": d.name, "Value": d.value, "Unit": d.unit,
             "Dimensions": [{"Name": k, "Value": v} for k, v in sorted(d.dimensions.items())]}
            for d in DATA
        ],
    }  # fmt: skip
    expected = serialize.create_serializer("query").serialize_to_request(params, model.operation_model("PutMetricData"))
    ours = dict(urllib.parse.parse_qsl(cloudwatch.put_metric_data_body(hub_gpu_idle_metrics.METRICS_NAMESPACE, DATA)))
    assert ours == {key: str(value) for key, value in expected["body"].items()}


def test_the_signature_is_botocores_sigv4() -> None:
    host = "monitoring.us-west-1.amazonaws.com"
    body = cloudwatch.put_metric_data_body(hub_gpu_idle_metrics.METRICS_NAMESPACE, DATA)
    ours = cloudwatch.signed_headers(CREDENTIALS, "us-west-1", host, body, NOW)
    request = AWSRequest(method="POST", url=f"https://{host}/", data=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})  # fmt: skip
    theirs = BotocoreCredentials(CREDENTIALS.access_key, CREDENTIALS.secret_key, CREDENTIALS.token)
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        SigV4Auth(theirs, "monitoring", "us-west-1").add_auth(request)
    assert ours["authorization"] == request.headers["Authorization"]
    assert ours["x-amz-security-token"] == "session-token"


def test_the_role_may_only_put_metrics_into_the_reapers_namespace() -> None:
    (statement,) = hub_gpu_idle_metrics.metrics_policy()["Statement"]
    assert statement["Action"] == "cloudwatch:PutMetricData"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "GpuPlatform/GpuIdleReaper"}}


def test_numbers_per_lab_and_per_cluster_and_what_a_stop_reclaims() -> None:
    dimensions = {tuple(sorted(d.dimensions)) for d in DATA}
    assert dimensions == {("ClusterName", "Lab"), ("ClusterName",)}
    alarm = hub_gpu_idle_metrics.blind_nodes_alarm("gpu-staging")
    assert (alarm["metric_name"], alarm["dimensions"]) == ("NodesWithoutProcessSamples", {"ClusterName": "gpu-staging"})
    learner = Learner("bob", False, frozenset(), started_at=0.0, running=True)
    assert reclaimed_hours(learner, now=3 * 3600, max_hours=8) == 5.0
    assert reclaimed_hours(learner, now=9 * 3600, max_hours=8) == 0.0
