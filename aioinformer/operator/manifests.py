"""The webhook configurations of a server's registered handlers, written from code.

Role: what ``controller-gen webhook`` writes from kubebuilder markers, from the
registrations themselves. :func:`webhook_manifests` turns the admission webhooks of a
:class:`~aioinformer.operator.webhook.WebhookServer` (or a Manager's ``webhooks``) into one
``ValidatingWebhookConfiguration`` and one ``MutatingWebhookConfiguration``
(``admissionregistration.k8s.io/v1``, each only when it has entries), and each registered
conversion into a patch of its CustomResourceDefinition's ``spec.conversion``
(``strategy: Webhook``, ``conversionReviewVersions: ["v1"]``); the ``aioinformer webhook
manifests`` command prints them.

Input: the server, and how kube-apiserver reaches it: a Service (``(namespace, name,
port)``, the usual way in a cluster) or a URL (``https://host:port``, outside one), plus
the CA bundle to trust it (the self-signed CA unless told; with none the entries carry no
``caBundle``, which cert-manager's CA injector fills from the
``cert-manager.io/inject-ca-from`` annotation). Output: plain dicts, ready for
``kubectl apply`` or a client's ``create``, with every field kube-apiserver requires
(``admissionReviewVersions``, ``sideEffects``, ``clientConfig``, rules, policies,
selectors, ``timeoutSeconds``).

Task model: synchronous, no I/O.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Protocol

from aioinformer.operator.webhook import WebhookServer

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["HasWebhooks", "conversion_patch", "webhook_manifests"]


class HasWebhooks(Protocol):
    """What carries a webhook server: a :class:`~aioinformer.operator.manager.Manager`."""

    @property
    def webhooks(self) -> WebhookServer: ...


def _client_config(
    path: str, service: tuple[str, str, int] | None, url: str | None, ca_bundle: bytes | None
) -> dict[str, Any]:
    config: dict[str, Any]
    if service is not None:
        namespace, name, port = service
        config = {"service": {"namespace": namespace, "name": name, "path": path, "port": port}}
    else:
        assert url is not None
        config = {"url": url.rstrip("/") + path}
    if ca_bundle:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    return config


def _check_target(service: tuple[str, str, int] | None, url: str | None) -> None:
    if (service is None) == (url is None):
        raise ValueError("give service=(namespace, name, port) or url=, exactly one")
    if service is not None:
        namespace, name, port = service
        if not namespace or not name:
            raise ValueError(f"service needs a namespace and a name, got {service!r}")
        if isinstance(port, bool) or not 1 <= port <= 65535:
            raise ValueError(f"service port must be 1..65535, got {port!r}")
    if url is not None and (not url.startswith("https://") or "?" in url or "#" in url):
        raise ValueError(f"url must be https:// without a query or fragment, got {url!r}")


def webhook_manifests(
    source: WebhookServer | HasWebhooks,
    *,
    service: tuple[str, str, int] | None = None,
    url: str | None = None,
    ca_bundle: bytes | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The documents for ``source``'s registered webhooks: a
    ``ValidatingWebhookConfiguration`` and a ``MutatingWebhookConfiguration`` named
    ``name`` (by default kubebuilder's ``validating-webhook-configuration`` and
    ``mutating-webhook-configuration``; each only when it has entries), then one
    CustomResourceDefinition conversion patch per conversion (:func:`conversion_patch`),
    in that order.

    kube-apiserver calls ``service`` (``(namespace, name, port)``; each entry's path is its
    handler's) or ``url`` (the handler's path appended), exactly one; ``ca_bundle`` (PEM)
    defaults to the server's self-signed CA, if any. ``labels`` and ``annotations`` go on
    both configurations (cert-manager's ``cert-manager.io/inject-ca-from: ns/cert``).
    ``ValueError`` for a bad target, or a server with nothing registered."""
    server = source if isinstance(source, WebhookServer) else source.webhooks
    _check_target(service, url)
    if not server.has_handlers:
        raise ValueError("the webhook server has nothing registered: no manifests to write")
    bundle = ca_bundle if ca_bundle is not None else server.ca_bundle

    def metadata(webhook_type: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name or f"{webhook_type}-webhook-configuration"}
        if labels:
            meta["labels"] = dict(labels)
        if annotations:
            meta["annotations"] = dict(annotations)
        return meta

    documents: list[dict[str, Any]] = []
    for webhook_type, kind in (
        ("validating", "ValidatingWebhookConfiguration"),
        ("mutating", "MutatingWebhookConfiguration"),
    ):
        entries = [
            webhook.configuration_entry(_client_config(webhook.path, service, url, bundle))
            for webhook in server.admission_webhooks
            if webhook.type == webhook_type
        ]
        if entries:
            documents.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": metadata(webhook_type),
                    "webhooks": entries,
                }
            )
    for path, handler in server.conversions.items():
        documents.append(
            conversion_patch(
                handler.crd_name, path=path, service=service, url=url, ca_bundle=bundle
            )
        )
    return documents


def conversion_patch(
    crd_name: str,
    *,
    path: str = "/convert",
    service: tuple[str, str, int] | None = None,
    url: str | None = None,
    ca_bundle: bytes | None = None,
) -> dict[str, Any]:
    """A patch of the CustomResourceDefinition ``crd_name`` (``widgets.example.com``)
    sending its conversions to the webhook at ``path``: apply it with
    ``kubectl patch crd widgets.example.com --type merge --patch-file``, or merge it into the
    CRD's manifest. Target as :func:`webhook_manifests`."""
    _check_target(service, url)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": _client_config(path, service, url, ca_bundle),
                },
            }
        },
    }
