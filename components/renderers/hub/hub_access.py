"""How learners reach a lab's hub and sign in: the authenticator's `hub.config` and the proxy's load balancer.

- The authenticator: shared password, GitHub organisations or a generic OIDC provider (the secrets stay in the
  chart's Secret; `components/hub.py` adds them).
- The load balancer: the EKS cloud provider's Service annotations (kubernetes/cloud-provider-aws
  pkg/providers/v1/aws.go: `aws-load-balancer-type: nlb`, `-ssl-cert`, `-ssl-ports`, `-ssl-negotiation-policy`,
  `-backend-protocol`, `-internal`; TLS listeners with a security policy in pkg/providers/v1/aws_loadbalancer.go
  @ v1.35.2). Chosen over the AWS Load Balancer Controller: the built-in controller already runs in every EKS
  control plane, so nothing more is installed, upgraded or granted IAM rights; one NLB with an ACM certificate is
  all a hub needs (no path routing, no WAF). The chart's `proxy.https.type: offload` sends port 443 to the
  proxy's plain port and `disableHttpPort` removes port 80: nothing is served in clear text.

Pure: settings in, dicts out.
"""

from __future__ import annotations

from typing import Any, Final

from components.settings import GithubAuth, HubSettings, OidcAuth, SharedPasswordAuth

Values = dict[str, Any]

# The NLB's TLS listener policy: TLS 1.3 and 1.2 only (Elastic Load Balancing security policies).
TLS_POLICY: Final = "ELBSecurityPolicy-TLS13-1-2-2021-06"
LB_ANNOTATION: Final = "service.beta.kubernetes.io/aws-load-balancer-"


def authenticator_config(hub: HubSettings) -> Values:
    """`hub.config` sections: the authenticator class and its settings (secrets stay in the chart's Secret)."""
    auth = hub.auth
    admins = {"admin_users": list(hub.admin_users)} if hub.admin_users else {}
    callback = {"oauth_callback_url": f"https://{hub.hostname}/hub/oauth_callback"}
    if isinstance(auth, SharedPasswordAuth):
        shared: Values = {"user_password": auth.password}
        if auth.admin_password is not None:
            shared["admin_password"] = auth.admin_password
        return {
            "JupyterHub": {"authenticator_class": "shared-password"},
            "Authenticator": {"allow_all": True, **admins},
            "SharedPasswordAuthenticator": shared,
        }
    if isinstance(auth, GithubAuth):
        return {
            "JupyterHub": {"authenticator_class": "github"},
            "Authenticator": admins,
            "GitHubOAuthenticator": {
                "client_id": auth.client_id,
                "client_secret": auth.client_secret,
                "allowed_organizations": list(auth.allowed_organizations),
                "scope": ["read:org"],
                **callback,
            },
        }
    assert isinstance(auth, OidcAuth)
    # oauthenticator 17 refuses allowed_groups, admin_groups and auth_state_groups_key without manage_groups
    # (ValueError at start: jupyterhub/oauthenticator oauthenticator/oauth2.py @ 17.4.0,
    # OAuthenticator._requires_manage_groups; changelog 17.0). With it the IdP's groups become JupyterHub groups.
    return {
        "JupyterHub": {"authenticator_class": "generic-oauth"},
        "Authenticator": admins,
        "GenericOAuthenticator": {
            "client_id": auth.client_id,
            "client_secret": auth.client_secret,
            "authorize_url": auth.authorize_url,
            "token_url": auth.token_url,
            "userdata_url": auth.userdata_url,
            "username_claim": auth.username_claim,
            "manage_groups": True,
            "auth_state_groups_key": f"oauth_user.{auth.groups_claim}",
            "allowed_groups": list(auth.allowed_groups),
            "scope": ["openid", "email", "profile"],
            **callback,
        },
    }


def proxy_service(hub: HubSettings) -> Values:
    """`proxy.service`: an NLB from the EKS cloud provider; TLS with the ACM certificate on port 443 only."""
    annotations = {f"{LB_ANNOTATION}type": "nlb"}
    if hub.internal:
        annotations[f"{LB_ANNOTATION}internal"] = "true"
    if hub.certificate_arn is not None:
        annotations |= {
            f"{LB_ANNOTATION}ssl-cert": hub.certificate_arn,
            f"{LB_ANNOTATION}ssl-ports": "https",
            f"{LB_ANNOTATION}ssl-negotiation-policy": TLS_POLICY,
            f"{LB_ANNOTATION}backend-protocol": "tcp",
        }
    return {"type": "LoadBalancer", "annotations": annotations, "disableHttpPort": hub.certificate_arn is not None}
