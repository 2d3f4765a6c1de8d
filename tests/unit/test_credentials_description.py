"""What a 401 says about the credentials it refused: ``Config.describe_credentials()``
names the kind of credential and its file or plugin, the kubeconfig user, the context and
the kubeconfig file (in a pod: the service account token file), and never a secret; an
``Unauthorized`` carrying it ends its message with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from aioinformer.config import Config, ExecConfig, load_incluster_config, load_kube_config
from aioinformer.errors import Unauthorized, api_error_from_status

if TYPE_CHECKING:
    from pathlib import Path

SECRET = "s3cr3t-token-value"

KUBECONFIG = f"""
apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {{server: "https://10.0.0.1:6443"}}
users:
- name: alice
  user: {{token: {SECRET}}}
contexts:
- name: prod-admin
  context: {{cluster: prod, user: alice}}
current-context: prod-admin
"""


def test_a_kubeconfig_token_names_user_context_and_file(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    config = load_kube_config(path)
    assert config.user == "alice"
    assert config.describe_credentials() == (
        f"the bearer token of user 'alice', context 'prod-admin' in {path}"
    )


def test_in_cluster_names_the_service_account_token_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(SECRET)
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_incluster_config(environ=environ, service_account_dir=tmp_path)
    assert config.describe_credentials() == (
        f"the service account token file {tmp_path / 'token'}, in-cluster"
    )


@pytest.mark.parametrize(
    ("config", "described"),
    [
        pytest.param(Config(host="https://k"), "no credentials", id="none"),
        pytest.param(Config(host="https://k", token=SECRET), "the bearer token", id="token"),
        pytest.param(
            Config(host="https://k", token_file="/etc/token"),
            "the token file /etc/token",
            id="token-file",
        ),
        pytest.param(
            Config(host="https://k", exec=ExecConfig(command="/usr/bin/aws-iam-authenticator")),
            "the exec plugin 'aws-iam-authenticator'",
            id="exec",
        ),
        pytest.param(
            Config(host="https://k", username="bob", password=SECRET),
            "basic auth as 'bob'",
            id="basic",
        ),
        pytest.param(
            Config(host="https://k", cert_file="/etc/client.crt", key_file="/etc/client.key"),
            "the client certificate /etc/client.crt",
            id="certificate",
        ),
        pytest.param(
            Config(host="https://k", token=SECRET, context="dev", source="/home/me/.kube/config"),
            "the bearer token, context 'dev' in /home/me/.kube/config",
            id="context",
        ),
    ],
)
def test_each_kind_of_credential_is_named_without_its_secret(
    config: Config, described: str
) -> None:
    assert config.describe_credentials() == described
    assert SECRET not in described


def test_an_unauthorized_with_credentials_ends_its_message_with_them() -> None:
    status = {"kind": "Status", "code": 401, "reason": "Unauthorized", "message": "Unauthorized"}
    error = Unauthorized(status, credentials="the bearer token of user 'alice'")
    assert str(error) == (
        "401 Unauthorized: Unauthorized; credentials sent: the bearer token of user 'alice'"
    )
    assert str(api_error_from_status(status)) == "401 Unauthorized: Unauthorized"
