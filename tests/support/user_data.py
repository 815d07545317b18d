"""Reading a rendered GPU userData: its MIME parts, the nodeadm NodeConfig and the shell part.

Shared by the userData renderer tests and every test that reads userData out of a plan (the managed
GPU node group's launch template, the Karpenter EC2NodeClass).
"""

from __future__ import annotations

import email
import email.policy
from typing import Any

import yaml

from components.renderers.nodes.gpu_bootstrap import MIME_BOUNDARY, NODECONFIG_CONTENT_TYPE, SHELL_CONTENT_TYPE


def mime_parts(user_data: str) -> list[tuple[str, str]]:
    """(content type, decoded body) of each part; fails on any MIME defect."""
    message = email.message_from_string(user_data, policy=email.policy.default)
    assert not message.defects, message.defects
    assert message["MIME-Version"] == "1.0"
    assert message.get_content_type() == "multipart/mixed"
    assert message.get_boundary() == MIME_BOUNDARY
    parts = []
    for part in message.iter_parts():
        assert not part.defects, part.defects
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        parts.append((part.get_content_type(), payload.decode("ascii")))
    return parts


def node_config_of(user_data: str) -> dict[str, Any]:
    [body] = [body for content_type, body in mime_parts(user_data) if content_type == NODECONFIG_CONTENT_TYPE]
    document = yaml.safe_load(body)
    assert isinstance(document, dict)
    return document


def shell_part_of(user_data: str) -> str:
    [body] = [body for content_type, body in mime_parts(user_data) if content_type == SHELL_CONTENT_TYPE]
    return body
