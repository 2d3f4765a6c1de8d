"""Where the fake API server connects to call a webhook, admission or conversion alike.

Role: the one resolver of a webhook's ``clientConfig``. Input is the configuration's
``url``, or its ``service`` reference (namespace, name, port, path), the server's
``webhook_services`` mapping and the query kube-apiserver adds (``?timeout=<n>s``);
output is a :class:`WebhookAddress`: the URL as kube-apiserver names it in its messages,
the URL connected to, and the name the server's certificate is checked for.

A ``url`` is connected to as it is. A ``service`` is named
``https://<name>.<namespace>.svc:<port><path>`` (the fake has no cluster network and no
DNS for it): it connects to the ``(host, port)`` ``webhook_services[(namespace, name)]``
gives when the service is listed there, else to 127.0.0.1 at the reference's port; in
both cases the certificate is checked for ``<name>.<namespace>.svc`` and the ``Host``
header names it, as a call through the cluster's DNS would.

Task model: pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["WebhookAddress", "service_address", "url_address"]

_LOOPBACK: Final = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class WebhookAddress:
    """One webhook's endpoint.

    ``shown`` is the URL kube-apiserver would post to (what messages name), ``url`` the
    one connected to; ``server_name`` the name the certificate is checked for and the
    ``Host`` header carries when it differs from ``url``'s host (``None``: a ``url``
    configuration, checked for its own host)."""

    shown: str
    url: str
    server_name: str | None = None

    def headers(self) -> dict[str, str]:
        """The ``Host`` header a service's call carries (none for a ``url``)."""
        if self.server_name is None:
            return {}
        return {"Host": self.shown.split("/")[2]}


def url_address(url: str, query: str) -> WebhookAddress:
    """A ``clientConfig.url`` with kube-apiserver's query added."""
    return WebhookAddress(url + query, url + query)


def service_address(
    namespace: str,
    name: str,
    port: int,
    path: str,
    query: str,
    services: Mapping[tuple[str, str], tuple[str, int]],
) -> WebhookAddress:
    """A ``clientConfig.service`` reference: the mapped ``(host, port)`` when
    ``services`` lists it, else 127.0.0.1 at ``port`` (see the module docstring)."""
    server_name = f"{name}.{namespace}.svc"
    host, connect_port = services.get((namespace, name), (_LOOPBACK, port))
    return WebhookAddress(
        f"https://{server_name}:{port}{path}{query}",
        f"https://{host}:{connect_port}{path}{query}",
        server_name,
    )
