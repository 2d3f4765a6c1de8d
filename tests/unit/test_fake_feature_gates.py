"""The fake API server's feature gates: the known ones (``ShardedListAndWatch``, off by
default as kube-apiserver v1.36 has its alpha gate), set by name when the server is made
and fixed from then on; an unknown name is refused, as kube-apiserver refuses to start
with one."""

from __future__ import annotations

import re
from typing import Any

import pytest

from aioinformer.testing import FakeAPIServer, ThreadedFakeAPIServer


def test_every_known_gate_is_read_back_at_its_default_unless_set() -> None:
    assert dict(FakeAPIServer().feature_gates) == {"ShardedListAndWatch": False}
    server = FakeAPIServer(feature_gates={"ShardedListAndWatch": True})
    assert dict(server.feature_gates) == {"ShardedListAndWatch": True}
    with pytest.raises(TypeError):
        server.feature_gates["ShardedListAndWatch"] = False  # type: ignore[index]


@pytest.mark.parametrize("kind", [FakeAPIServer, ThreadedFakeAPIServer])
def test_an_unknown_gate_is_a_value_error_naming_it_and_the_known_ones(kind: Any) -> None:
    message = "unrecognized feature gate: 'WatchFromStorage' (known gates: ShardedListAndWatch)"
    with pytest.raises(ValueError, match=re.escape(message)):
        kind(feature_gates={"ShardedListAndWatch": True, "WatchFromStorage": True})


def test_a_gate_is_on_or_off_nothing_else() -> None:
    with pytest.raises(
        ValueError, match="feature gate 'ShardedListAndWatch' must be True or False"
    ):
        FakeAPIServer(feature_gates={"ShardedListAndWatch": "true"})  # type: ignore[dict-item]
