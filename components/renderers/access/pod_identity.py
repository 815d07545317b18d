"""The IAM trust policy of a role that EKS Pod Identity hands to one service account (pure renderer)."""

from __future__ import annotations

from typing import Any

from components.facts.constants import IAM_POLICY_VERSION


def pod_identity_trust_policy(cluster_name: str, namespace: str, service_account: str) -> dict[str, Any]:
    """EKS Pod Identity may assume the role, only for `namespace`/`service_account` of this cluster.

    Pod Identity sets these session tags on every AssumeRole (hence sts:TagSession), so the role
    cannot be borrowed by an association for another cluster, namespace or service account.
    """
    return {
        "Version": IAM_POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                },
            }
        ],
    }
