"""The reaper's Kubernetes calls, with the hub pod's own service account token (stdlib only).

- list the platform's dcgm-exporter pods in `amazon-cloudwatch` (a Role there: pods get/list);
- read the CA that signed the exporter's serving certificate (`ca.crt` of the add-on's
  `amazon-cloudwatch-observability-agent-cert` Secret, the one Secret the Role names);
- scrape each exporter pod at its IP on :9400 over TLS, checking the certificate against that CA and the name
  the add-on's certificate carries (`dcgm-exporter-service.amazon-cloudwatch.svc`): the Service itself keeps
  traffic node-local (`internalTrafficPolicy: Local`), so only the pods' own addresses reach every node;
- write one Event per decision on the notebook pod (a Role in the lab's namespace, where notebooks run: events create).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import time
import urllib.parse
from pathlib import Path
from typing import Any

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TIMEOUT_SECONDS = 10


class Kube:
    def __init__(self) -> None:
        # A managed service gets only the hub's `env_keep` variables, so the API's DNS name is the fallback.
        self.host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        self.port = int(os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
        self.context = ssl.create_default_context(cafile=str(ACCOUNT / "ca.crt"))

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=TIMEOUT_SECONDS)
        headers = {"Authorization": f"Bearer {(ACCOUNT / 'token').read_text().strip()}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            text = response.read()
            if response.status >= 300:
                raise OSError(f"{method} {path}: HTTP {response.status}")
            return json.loads(text)
        finally:
            connection.close()

    def exporter_pods(self, namespace: str, selector: str) -> list[tuple[str, str]]:
        """(pod IP, node name) of each running exporter pod."""
        query = urllib.parse.urlencode({"labelSelector": selector, "fieldSelector": "status.phase=Running"})
        answer = self._call("GET", f"/api/v1/namespaces/{namespace}/pods?{query}")
        return [
            (item["status"]["podIP"], item["spec"].get("nodeName", ""))
            for item in answer.get("items", [])
            if item.get("status", {}).get("podIP")
        ]

    def ca_bundle(self, namespace: str, secret: str) -> str:
        answer = self._call("GET", f"/api/v1/namespaces/{namespace}/secrets/{secret}")
        return base64.b64decode(answer["data"]["ca.crt"]).decode()

    def event(self, namespace: str, pod: str, reason: str, message: str, warning: bool) -> None:
        self._call(
            "POST", f"/api/v1/namespaces/{namespace}/events", event_body(namespace, pod, reason, message, warning)
        )


def event_body(namespace: str, pod: str, reason: str, message: str, warning: bool) -> dict[str, Any]:
    """A core/v1 Event on the notebook pod (what `kubectl describe pod` and `kubectl get events` show)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{pod}.gpu-idle-", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "gpu-idle-reaper"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def scrape(address: str, port: int, ca_pem: str, server_name: str) -> str:
    """GET /metrics from one exporter pod, TLS checked against `ca_pem` and `server_name`."""
    context = ssl.create_default_context(cadata=ca_pem)
    with (
        socket.create_connection((address, port), timeout=TIMEOUT_SECONDS) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        tls.sendall(f"GET /metrics HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := tls.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    head, _, body = response.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1] if head.count(b" ") >= 1 else b""
    if status != b"200":
        raise OSError(f"exporter {address}: {head.splitlines()[0].decode(errors='replace') if head else 'no answer'}")
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return body.decode()


def _unchunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)
