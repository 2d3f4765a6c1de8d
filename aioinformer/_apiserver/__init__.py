"""The server-side kit: what a server of the Kubernetes list/watch API is made of.

Used by the fake API server (``aioinformer.testing``) and the caching proxy
(``aioinformer.proxy``), nothing else: ``objects`` (resource types, stored entries,
``Status`` errors), ``watch`` (history events, watchers, LIST pages, watch lines),
``watchcache`` (kube-apiserver's watch cache: history window, snapshots, resourceVersion
rules, watchers, bookmarks), ``requests`` (request parsing and answers), ``discovery``
(the discovery documents) and ``lifecycle`` (``async with`` a server).
"""
