"""Typed pods: an informer with ``model=Pod`` hands out validated ``Pod`` models.

The models of the built-in kinds come with the package (:mod:`aioinformer.k8s`); the cache
stays raw and each object is validated when it is read, so a typed informer costs nothing
for the objects nobody reads. Runs against the embedded fake API server::

    python examples/typed_pods.py

Against a real cluster, replace the server with ``Client.from_env()`` and drop the
``server.create/patch`` calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aioinformer.factory import SharedInformerFactory
from aioinformer.k8s.core_v1 import Container, Pod, PodSpec, ResourceRequirements
from aioinformer.models import ObjectMeta
from aioinformer.testing import FakeAPIServer


def pod(name: str, image: str, memory: str) -> dict[str, Any]:
    """A Pod built from the models, dumped to the JSON the API server takes."""
    model = Pod(
        metadata=ObjectMeta(name=name, namespace="default", labels={"app": "web"}),
        spec=PodSpec(
            containers=[
                Container(
                    name="web",
                    image=image,
                    resources=ResourceRequirements(limits={"memory": memory}),
                )
            ],
            node_name="node-1",
        ),
    )
    return model.model_dump(by_alias=True, exclude_none=True)


def describe(obj: Pod) -> str:
    assert obj.spec is not None
    assert obj.spec.containers
    container = obj.spec.containers[0]
    limits = container.resources.limits if container.resources else None
    return f"{obj.metadata.name}: image={container.image} limits={limits} node={obj.spec.node_name}"


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        server.create(pod("web-0", "nginx:1.27", "128Mi"))
        server.create(pod("web-1", "nginx:1.27", "256Mi"))

        async with SharedInformerFactory(client) as factory:
            pods = factory.informer_for("v1/pods", namespace="default", model=Pod)
            updated = asyncio.Event()

            def on_update(old: Pod, new: Pod) -> None:
                print("updated", new.metadata.name, "labels", new.metadata.labels)
                updated.set()

            pods.add_event_handler(on_update=on_update)
            if not await pods.wait_for_sync(timeout=10):
                raise SystemExit("the informer did not sync")

            lister = pods.lister()
            for obj in sorted(lister.list(), key=lambda p: str(p.metadata.name)):
                print("cached ", describe(obj))

            server.patch("pods", "default", "web-1", {"metadata": {"labels": {"tier": "front"}}})
            await asyncio.wait_for(updated.wait(), timeout=10)
            web_1 = lister.get("web-1", namespace="default")
            assert web_1 is not None
            print("type:", type(web_1).__name__, "| apiVersion:", web_1.api_version)


if __name__ == "__main__":
    asyncio.run(main())
