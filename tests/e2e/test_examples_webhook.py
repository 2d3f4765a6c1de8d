"""The Widget operator's validating webhook, as a user deploys it: the CRD applied with
kubectl, the operator's Manager serving the webhook, its configuration printed by
``aioinformer webhook manifests widget_operator:webhooks`` (run in ``examples/``) and
applied with kubectl, and then a Widget kubectl applies refused in kube-apiserver's words
while a valid one is reconciled."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
import yaml

from aioinformer.operator import WebhookOptions
from aioinformer.operator.recorder import EventRecorder
from tests._support_cli import LINE_TIMEOUT, cli_env
from tests._support_wait import wait_until
from tests.e2e.test_examples_operator import EXAMPLES, SERVER_POLL, config_maps, widget_operator
from tests.e2e.test_fake_apiserver_kubectl import KUBECTL, kubectl, manifest

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.fake_apiserver(tls=True),
]


async def manifests_command(*args: str) -> str:
    """``aioinformer webhook manifests ARGS`` run in ``examples/``; its stdout."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "webhook",
        "manifests",
        *args,
        cwd=EXAMPLES,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    async with asyncio.timeout(LINE_TIMEOUT):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_meets_the_widget_webhook_the_command_configured(
    fake_apiserver: FakeAPIServer, kube_client: Client, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    crd = manifest(tmp_path, "crd.yaml", widget_operator.WIDGET_CRD)
    code, _, err = await kubectl(fake_apiserver, home, "apply", "-f", crd)
    assert code == 0, err

    recorder = EventRecorder(kube_client, reporting_controller=widget_operator.REPORTING_CONTROLLER)
    webhook = WebhookOptions(address="127.0.0.1:0", self_signed=("127.0.0.1",))
    manager, _ = widget_operator.build_manager(kube_client, recorder, webhook=webhook)
    async with recorder, manager:
        ca = tmp_path / "ca.crt"
        assert manager.webhooks.ca_bundle is not None
        ca.write_bytes(manager.webhooks.ca_bundle)
        printed = await manifests_command(
            "widget_operator:webhooks",
            "--url",
            f"https://{manager.webhooks.address}",
            "--ca-bundle",
            str(ca),
        )
        (configuration,) = list(yaml.safe_load_all(printed))
        assert configuration["kind"] == "ValidatingWebhookConfiguration"
        hooks = tmp_path / "webhooks.yaml"
        hooks.write_text(printed)
        code, _, err = await kubectl(fake_apiserver, home, "apply", "-f", str(hooks))
        assert code == 0, err

        huge = manifest(tmp_path, "huge.yaml", widget_operator.widget("huge", "Hi", size=50))
        code, _, err = await kubectl(fake_apiserver, home, "apply", "-f", huge)
        assert code != 0
        assert (
            'admission webhook "vwidget.example.com" denied the request:'
            " spec.size must be at most 10, not 50"
        ) in err
        blank = manifest(tmp_path, "blank.yaml", widget_operator.widget("blank", "  "))
        code, _, err = await kubectl(fake_apiserver, home, "apply", "-f", blank)
        assert code != 0
        assert "spec.greeting may not be blank" in err

        fine = manifest(tmp_path, "fine.yaml", widget_operator.widget("fine", "Hello", size=3))
        code, _, err = await kubectl(fake_apiserver, home, "apply", "-f", fine)
        assert code == 0, err
        await wait_until(
            lambda: "fine-config" in config_maps(fake_apiserver), poll=SERVER_POLL, timeout=10
        )
    names = [w["metadata"]["name"] for w in fake_apiserver.objects(widget_operator.WIDGETS)]
    assert names == ["fine"]
