"""The ingress use case: an ingress controller reads Endpoints through a caching proxy that
points every Service's endpoints at a router, while the cluster keeps the real addresses.

``to_router`` is the transform. Each Endpoints object served by the proxy gets one
address, the router's (``$ROUTER_IP``, default ``10.0.0.100``), on ``$ROUTER_PORT``
(default ``8443``) under each of its port names; the addresses it replaced are kept in
the ``router.example.com/backends`` annotation. ``default/kubernetes`` and everything in
``kube-system`` pass through untouched. Endpoints with no ready address are hidden, so the
ingress controller drops their routes instead of sending traffic to the router for them.

Run it with ``python examples/rewrite_endpoints.py``: it starts the embedded fake API
server with three Services' Endpoints, serves ``v1/endpoints`` through a
:class:`~aioinformer.proxy.CachingProxy` with ``to_router``, and then, as the ingress
controller would, reads them through the proxy with a shared informer: the rewritten
list, then the change when a backend is added upstream, while the upstream objects stay
as they are. It prints each step and exits 0.

The same transform serves a real cluster from the command line (run from this directory,
so that the module is found)::

    aioinformer proxy --resource v1/endpoints --transform rewrite_endpoints:to_router \\
        --listen 127.0.0.1:8001

and the ingress controller's kubeconfig points at ``http://127.0.0.1:8001`` (see
"Serve many clients from the proxy", docs/how-to/proxy.md, for TLS, tokens and
``--write-kubeconfig``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import meta_namespace_key as informer_key
from aioinformer.proxy import CachingProxy
from aioinformer.testing import FakeAPIServer, eventually

ROUTER_IP = os.environ.get("ROUTER_IP", "10.0.0.100")
ROUTER_PORT = int(os.environ.get("ROUTER_PORT", "8443"))
BACKENDS = "router.example.com/backends"


def _addresses(endpoints: dict[str, Any]) -> list[str]:
    """``ip:port`` of every ready address, in the object's order."""
    return [
        f"{address['ip']}:{port['port']}"
        for subset in endpoints.get("subsets") or []
        for address in subset.get("addresses") or []
        for port in subset.get("ports") or []
    ]


def to_router(endpoints: dict[str, Any]) -> dict[str, Any] | None:
    """The proxy's transform: ``endpoints`` pointed at the router (see the module notes);
    ``None`` hides one with no ready address."""
    meta = endpoints["metadata"]
    if meta.get("namespace") == "kube-system" or (
        meta.get("namespace"),
        meta.get("name"),
    ) == ("default", "kubernetes"):
        return endpoints
    backends = _addresses(endpoints)
    if not backends:
        return None
    names = sorted({port.get("name", "") for s in endpoints["subsets"] for port in s["ports"]})
    ports = [{"name": name, "port": ROUTER_PORT, "protocol": "TCP"} for name in names]
    endpoints["subsets"] = [{"addresses": [{"ip": ROUTER_IP}], "ports": ports}]
    meta.setdefault("annotations", {})[BACKENDS] = ",".join(backends)
    return endpoints


def endpoints(namespace: str, name: str, *ips: str, port: int = 8080) -> dict[str, Any]:
    """An Endpoints object with ``ips`` ready on ``port`` (named ``http``)."""
    subsets = [{"addresses": [{"ip": ip} for ip in ips], "ports": [{"name": "http", "port": port}]}]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace},
        "subsets": subsets if ips else [],
    }


def describe(obj: dict[str, Any]) -> str:
    """``namespace/name: ip:port ...`` (and the backends annotation, when there is one)."""
    meta = obj["metadata"]
    text = f"{meta['namespace']}/{meta['name']}: {' '.join(_addresses(obj)) or '-'}"
    backends = (meta.get("annotations") or {}).get(BACKENDS)
    return f"{text} (backends {backends})" if backends else text


async def main() -> None:
    async with FakeAPIServer() as server:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        server.create(endpoints("default", "kubernetes", "172.18.0.2", port=6443))
        server.create(endpoints("shop", "web", "10.1.0.10", "10.1.0.11"))
        server.create(endpoints("shop", "api", "10.1.1.20"))
        server.create(endpoints("shop", "batch"))  # no ready address yet
        for obj in server.objects("endpoints"):
            print("upstream", describe(obj))

        async with (
            server.client() as upstream,
            CachingProxy(upstream, resources=["v1/endpoints"], transform=to_router) as proxy,
            Client(Config(host=proxy.url)) as ingress,
        ):
            print("proxy serving v1/endpoints at", proxy.url)
            # What the ingress controller sees: a LIST through the proxy...
            listed = await ingress.resource("v1/endpoints").list()
            for obj in listed.items:
                print("served  ", describe(obj))

            # ...and its informer, kept current by the proxy's watch.
            factory = SharedInformerFactory(ingress)
            informer = factory.informer_for("v1/endpoints")

            def added(obj: dict[str, Any], in_initial_list: bool) -> None:
                if not in_initial_list:
                    print("watch   added", describe(obj))

            informer.add_event_handler(
                on_add=added,
                on_update=lambda _, new: print("watch   modified", describe(new)),
                on_delete=lambda obj: print("watch   deleted", informer_key(obj)),
            )
            async with factory:
                await factory.wait_for_cache_sync(timeout=10)
                server.update(endpoints("shop", "web", "10.1.0.10", "10.1.0.11", "10.1.0.12"))
                server.update(endpoints("shop", "batch", "10.1.2.30"))
                server.update(endpoints("shop", "api"))  # its only backend went away

                def caught_up() -> bool:
                    keys = sorted(informer.indexer.list_keys())
                    web = informer.indexer.get_by_key("shop/web")
                    return keys == ["default/kubernetes", "shop/batch", "shop/web"] and (
                        web is not None and "10.1.0.12" in web["metadata"]["annotations"][BACKENDS]
                    )

                await eventually(caught_up, timeout=10)
                served = sorted(informer.indexer.list_keys())
                print("ingress cache:", served)

            stats = proxy.statistics()["endpoints"]
            print(f"upstream watches: {stats.upstream_watches}, changes served: {stats.events}")
        web = server.get("endpoints", "shop", "web")
        print("upstream unchanged:", describe(web))


if __name__ == "__main__":
    asyncio.run(main())
