"""The private helpers of the pipeline's stages, beside the stage modules at the package's
top (:mod:`~aioinformer.reflector`, :mod:`~aioinformer.delta_fifo`,
:mod:`~aioinformer.indexer`, :mod:`~aioinformer.processor`).

- the reflector's: :mod:`~aioinformer.reflector` (the reader of a watch's
  batches), :mod:`~aioinformer._pipeline.watch_policy` (what follows the end of a watch),
  :mod:`~aioinformer._pipeline.list_policy` (what the next list asks for),
  :mod:`~aioinformer._pipeline.reflector_status` and
  :mod:`~aioinformer._pipeline.metric_recorders` (the reflector's and the indexes' metrics;
  the operator's and the client's recorders live in their wings);
- the FIFOs': :mod:`~aioinformer._pipeline.fifo_waits` (the condition poppers wait on),
  :mod:`~aioinformer._pipeline.fifo_producers` (the per-event producers subclasses
  override), :mod:`~aioinformer._pipeline.store_rv` (the store's resourceVersion) and
  :mod:`~aioinformer._pipeline.relist` (the tombstones a relist queues, the objects a
  resync re-offers);
- the indexer's: :mod:`~aioinformer._pipeline.indexes` (the index-function seam, the
  functions shipped, the check of their answers, and the value-to-keys maps);
- the processor's: :mod:`~aioinformer._pipeline.pending` (each handler's ``asyncio.Queue``),
  :mod:`~aioinformer._pipeline.model_guard` and :mod:`~aioinformer._pipeline.handlers` (a
  handler outside delivery: its protocol, settings, statistics and registration).

The objects' representation the stages share with every other wing (the compact entry,
the decoders, the views, the metadata accessors) is not here but one layer down, in
:mod:`aioinformer._objects`.

What a stage does for every event lives in the stage's own module, not here: the reading
of a watch stream in :mod:`~aioinformer.reflector`, applying a key's deltas in
:mod:`~aioinformer.informer`, the handler calls in :mod:`~aioinformer.processor`.
"""
