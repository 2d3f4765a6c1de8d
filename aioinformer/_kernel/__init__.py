"""The kernel every long-running part stands on: one lifecycle (the ``State``
vocabulary and the ``Service`` mixin, :mod:`~aioinformer._kernel.lifecycle`), starting
and reaping tasks (:mod:`~aioinformer._kernel.runner`, on anyio's task groups), time
(:mod:`~aioinformer._kernel.clock`), backoff
(:mod:`~aioinformer._kernel.backoff`), the cyclic collector's policy during a list
(:mod:`~aioinformer._kernel.gcpolicy`), waiting for caches to sync
(:mod:`~aioinformer._kernel.sync`) and the metrics seam (:mod:`~aioinformer._kernel.metrics`).

Nothing here knows an informer's or a queue's insides, nor speaks to the API: the pipeline
and the operator toolkit import the kernel, never the other way round. The one word of the
API the kernel reads is the vocabulary's, below it: the wait for sync names each informer's
source through :func:`aioinformer.listwatch.source_info` (the resource and namespace an
error names), reading informers through a protocol of its own.
"""
