"""The API client: everything that speaks HTTP to the API server.

Role: the public face of the client package. Input: a :class:`~aioinformer.config.Config`.
Output: decoded JSON (plain dicts, exactly as orjson produced them),
:class:`~aioinformer.listwatch.ObjectList` pages and
:class:`~aioinformer.listwatch.WatchEvent` streams. :class:`ResourceClient` is the real
``ListerWatcher``.

* :class:`Client` owns one aiohttp session (pooled keep-alive connections, TLS, proxy),
  opened lazily on the first request inside the running loop, so ``Client.from_env()`` is
  a plain (sync) constructor and ``async with Client.from_env() as client:`` works.
  ``close()`` closes every connection.
* Credentials come from the config (token, token file, exec plugin, basic auth, client
  certificate); a 401 refreshes rotating credentials and retries the request once.
* Resources are named by a :class:`GVR`, by ``"v1/configmaps"`` / ``"apps/v1/deployments"``,
  or by a bare plural (``"pods"``, a CRD's plural, ``"deployments.apps"``) that discovery
  (``/api``, ``/apis``) resolves; discovery answers are cached per client and refreshed
  once when a name is not found (a CRD installed since).
* Every non-2xx answer raises the matching :class:`~aioinformer.errors.ApiError`; every
  transport failure a :class:`~aioinformer.errors.TransportError`, both through the
  translation boundary ``aioinformer.client._transport``.
* With an installed metrics provider that implements :class:`RestClientMetricsProvider`
  (:mod:`aioinformer.contrib.prometheus` does), requests are counted and timed under
  client-go's REST client metric names (``rest_client_requests_total``,
  ``rest_client_request_duration_seconds``); a client reads the provider when it opens
  its session.

Names and namespaces are validated before they are put in a URL (``ValueError``).
Task model: all methods run in the caller's task; discovery of many group-versions runs
in a short-lived task group. Nothing is logged per request or per event.

The implementation lives in private modules, one concept each: ``_names`` (GVR,
ResourceInfo, path checks), ``_tls`` (SSL context), ``_auth`` (credentials), ``_http``
(session, requests, limits), ``_discovery``, ``_resource`` (ResourceClient) and
``_client`` (Client). This module only re-exports.

Example::

    async with Client.from_env() as client:
        pods = client.resource("pods", namespace="default")
        page = await pods.list(ListOptions(limit=500))
        async with contextlib.aclosing(pods.watch(ListOptions(
                resource_version=page.resource_version))) as events:
            async for event in events:
                print(event.type, event.object["metadata"]["name"])
"""

from __future__ import annotations

from aioinformer._kernel.metrics import RestClientMetricsProvider as RestClientMetricsProvider
from aioinformer.client._client import Client as Client
from aioinformer.client._http import DEFAULT_MAX_LIST_BYTES as DEFAULT_MAX_LIST_BYTES
from aioinformer.client._http import DEFAULT_MAX_OBJECT_BYTES as DEFAULT_MAX_OBJECT_BYTES
from aioinformer.client._names import GVR as GVR
from aioinformer.client._names import ResourceInfo as ResourceInfo
from aioinformer.client._resource import PatchType as PatchType
from aioinformer.client._resource import ResourceClient as ResourceClient

__all__ = [
    "Client",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "GVR",
    "PatchType",
    "ResourceClient",
    "ResourceInfo",
    "RestClientMetricsProvider",
]
