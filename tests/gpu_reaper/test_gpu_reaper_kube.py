"""The GPU idle reaper's Kubernetes side (gpu_reaper/kube.py): scraping an exporter pod at its IP over TLS, trusting
only the add-on's CA and only the name its certificate carries; and the Event it writes on a notebook pod."""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.renderers.hub.hub_gpu_idle import reaper_config
from components.settings import HubGpuIdleSettings
from gpu_reaper import classify
from gpu_reaper.kube import event_body, scrape
from gpu_reaper.promtext import parse
from tests.conftest import PROJECT_DIR
from tests.support.k8s_validation import validate_core_object

SCRAPE = PROJECT_DIR / "tests" / "fixtures" / "gpu_reaper" / "scrapes" / "1767258000.prom"
SERVER_NAME = reaper_config(HubGpuIdleSettings(), "lab")["exporter"]["serverName"]


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return key, cert


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """A TLS server like the exporter: a certificate for the add-on's Service names, signed by a CA."""
    ca_key, ca = _ca("amazon-cloudwatch-observability-ca")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("dcgm-exporter-service"), x509.DNSName(SERVER_NAME)]
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dcgm-exporter")]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False).sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "tls.crt").write_text(_pem(cert))
    (tmp_path / "tls.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    body = SCRAPE.read_bytes()

    class Metrics(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], _pem(ca)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_an_exporter_pod_is_scraped_at_its_address_with_the_add_ons_ca_and_name(exporter: tuple[int, str]) -> None:
    port, ca = exporter
    text = scrape("127.0.0.1", port, ca, SERVER_NAME)
    assert parse(text, classify.FIELDS) == parse(SCRAPE.read_text(), classify.FIELDS)


def test_another_name_or_another_ca_is_refused(exporter: tuple[int, str]) -> None:
    port, ca = exporter
    with pytest.raises(ssl.SSLCertVerificationError):
        scrape("127.0.0.1", port, ca, "someone-else.amazon-cloudwatch.svc")
    with pytest.raises(ssl.SSLCertVerificationError):
        scrape("127.0.0.1", port, _pem(_ca("another-ca")[1]), SERVER_NAME)


def test_each_decision_is_a_valid_event_on_the_pod() -> None:
    event = event_body("learning-lab", "jupyter-bob", "GpuIdleStop", "GPU slot held-idle: stop (user bob)", True)
    assert validate_core_object(event, "1.34") == []
    assert event["involvedObject"] == {"kind": "Pod", "namespace": "learning-lab", "name": "jupyter-bob",
                                       "apiVersion": "v1"}  # fmt: skip
