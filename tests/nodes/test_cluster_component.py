"""The Cluster component's declared outputs under per-test mocks: what `__main__.py` and the other
components read instead of reaching into `cluster.eks.eks_cluster`."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.settings import load_settings
from offline.config_files import read_stack_config
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, STACKS, run_program


@pytest.mark.usefixtures("reset_runtime")
@pytest.mark.parametrize("stack", STACKS)
def test_cluster_declares_its_outputs(stack: str) -> None:
    config = read_stack_config(PROJECT_DIR, stack)
    settings = load_settings(config.values)
    install_mocks(config.project, stack, settings.region, dict(config.values), list(config.secret_keys))
    checked: list[str] = []

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        cluster = run_program()["cluster"]
        assert cluster.cluster_name == settings.cluster_name  # physical name, known before deployment

        def verify(values: list[Any]) -> None:
            eks_name, endpoint, security_group, oidc_issuer, kubeconfig, kubeconfig_secret = values
            assert eks_name == settings.cluster_name
            assert endpoint == f"https://{settings.cluster_name}.placeholder.eks.{settings.region}.amazonaws.com"
            assert security_group == "sg-placeholdernodes"  # the mock's node security group
            assert oidc_issuer.endswith(f"oidc.eks.{settings.region}.amazonaws.com/id/PLACEHOLDER")
            assert json.loads(kubeconfig)["clusters"][0]["cluster"]["server"] == endpoint
            assert kubeconfig_secret is True, "the kubeconfig grants cluster access: it stays secret"
            checked.append(eks_name)

        return pulumi.Output.all(
            cluster.eks_cluster_name,
            cluster.endpoint,
            cluster.node_security_group_id,
            cluster.oidc_issuer,
            cluster.kubeconfig,
            pulumi.Output.from_input(cluster.kubeconfig.is_secret()),
        ).apply(verify)

    program()
    assert checked == [settings.cluster_name], "the Output assertions ran"
