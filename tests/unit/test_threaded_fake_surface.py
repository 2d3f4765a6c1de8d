"""The threaded fake offers what the fake offers: every public method and property of
``FakeAPIServer`` and of its ``Faults`` has a blocking counterpart of the same name and
parameters on ``ThreadedFakeAPIServer`` and ``ThreadedFaults``, so a test moves between
the two by changing its fixture's kind, not its calls. A name added to the fake fails
here until the threaded one has it (or it is listed below, with why)."""

from __future__ import annotations

import inspect

import pytest

from aioinformer.testing import FakeAPIServer, Faults, ThreadedFakeAPIServer, ThreadedFaults

SERVER_ONLY = {
    # Its lifecycle is the thread's: ``with``, start() and close() (which block; a
    # blocking aclose() would only repeat close()).
    "aclose",
    "run",
    "service_name",
    "stop",
    "wait_stopped",
}
"""Public names of ``FakeAPIServer`` a threaded one does not repeat."""

FAULTS_ONLY = {
    # The server's own wiring, not the test's: called by the store and the streams.
    "attach_freezer",
    "loses",
    "record",
}
"""Public names of ``Faults`` a threaded one does not repeat."""


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize(
    ("original", "threaded", "left_out"),
    [(FakeAPIServer, ThreadedFakeAPIServer, SERVER_ONLY), (Faults, ThreadedFaults, FAULTS_ONLY)],
    ids=["server", "faults"],
)
def test_every_public_name_has_a_blocking_counterpart(
    original: type, threaded: type, left_out: set[str]
) -> None:
    assert public(original) - left_out <= public(threaded)
    assert left_out <= public(original)  # nothing listed that is gone


def parameters(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values() if p.name != "self"]


@pytest.mark.parametrize(
    ("original", "threaded", "left_out"),
    [(FakeAPIServer, ThreadedFakeAPIServer, SERVER_ONLY), (Faults, ThreadedFaults, FAULTS_ONLY)],
    ids=["server", "faults"],
)
def test_the_counterparts_take_the_same_parameters(
    original: type, threaded: type, left_out: set[str]
) -> None:
    for name in sorted(public(original) - left_out):
        mine, theirs = getattr(original, name), getattr(threaded, name)
        if isinstance(mine, property) or not callable(mine):
            assert isinstance(theirs, property), name
            continue
        assert parameters(theirs) == parameters(mine), name
