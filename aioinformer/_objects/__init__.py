"""The objects themselves, as every wing holds them: the value types below the pipeline,
the client, the operator toolkit and the fake alike.

- :mod:`~aioinformer._objects.raw`: a compact cache's entry (an object's JSON bytes beside
  the few fields read per event) and the decoders of a source's bytes, plain or compact,
  that the REST client reads through;
- :mod:`~aioinformer._objects.view`: the read-only views a reader gets of an entry;
- :mod:`~aioinformer._objects.meta`: metadata accessors (name, namespace, uid, labels,
  resourceVersion, the default key function) that answer alike for a dict, a model, an
  entry and a view.

Nothing here knows a stage, a clock or a task: these modules import only the vocabulary
(:mod:`~aioinformer.listwatch`) and the foundations (:mod:`~aioinformer.models`,
:mod:`~aioinformer.errors`), so any layer may read an object without reaching into
another's helpers.
"""
