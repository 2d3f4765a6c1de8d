"""The Manager's webhook server in end-to-end tests: a CA with the server's certificate
files in a directory (rewritten to rotate them while serving), a Manager serving webhooks
with them, the names a new connection is shown, and the generated configurations applied
to the fake API server as ``kubectl apply`` would."""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any

import trustme

from aioinformer.operator.manager import Manager
from aioinformer.operator.manifests import webhook_manifests
from aioinformer.operator.webhook import WebhookOptions

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.client import Client


class WebhookPki:
    """A CA and the webhook's files in a directory, rewritable while serving."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        self.directory = directory
        self.write("127.0.0.1", "first.example")

    def write(self, *names: str) -> None:
        issued = self.ca.issue_cert(*names)
        (self.directory / "tls.crt").write_bytes(
            b"".join(blob.bytes() for blob in issued.cert_chain_pems)
        )
        (self.directory / "tls.key").write_bytes(issued.private_key_pem.bytes())

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context


def webhook_manager(client: Client, pki: WebhookPki, **options: Any) -> Manager:
    settings: dict[str, Any] = {
        "address": "127.0.0.1:0",
        "cert_dir": pki.directory,
        "cert_reload_interval": 0,
    }
    settings.update(options)
    return Manager(client, webhook=WebhookOptions(**settings), health_address="127.0.0.1:0")


async def served_names(manager: Manager, context: ssl.SSLContext) -> set[str]:
    """The names of the certificate a new connection is shown."""
    host, port = str(manager.webhooks.address).rsplit(":", 1)
    _, writer = await asyncio.open_connection(host, int(port), ssl=context)
    try:
        cert = writer.get_extra_info("peercert")
        return {value for _, value in cert["subjectAltName"]}
    finally:
        writer.close()
        await writer.wait_closed()


async def apply_manifests(client: Client, manager: Manager, ca: bytes) -> list[dict[str, Any]]:
    """Write ``manager``'s webhook configurations to the server (created, or the CRD's
    conversion patched in), called at its listening address and trusting ``ca``; the
    documents written."""
    documents = webhook_manifests(manager, url=f"https://{manager.webhooks.address}", ca_bundle=ca)
    for document in documents:
        kind = document["kind"]
        if kind == "CustomResourceDefinition":
            crds = client.resource("customresourcedefinitions")
            await crds.patch(document["metadata"]["name"], document)
        else:
            await client.resource(f"admissionregistration.k8s.io/v1/{kind.lower()}s").create(
                document
            )
    return documents
