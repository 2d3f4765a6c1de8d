"""An invalid label selector fails before any request: a factory or ``informer_for`` given
one raises :class:`SelectorError` and the fake API server's request log stays empty. The
rest of the bad-input suite is ``tests/unit/test_bad_input.py``.
"""

from __future__ import annotations

import pytest

from aioinformer.errors import SelectorError
from aioinformer.factory import SharedInformerFactory
from aioinformer.testing.apiserver import FakeAPIServer

# ---------------------------------------------------------------------------------------
# bad input from the user


BAD_SELECTORS = ["a in (", "=b", "a==b==c", "a,,b", "!", "a notin b", "x in (a b)"]


@pytest.mark.parametrize("selector", BAD_SELECTORS)
async def test_an_invalid_label_selector_fails_before_any_request(selector: str) -> None:
    async with FakeAPIServer() as server, server.client() as client:
        factory = SharedInformerFactory(client)
        with pytest.raises(SelectorError):
            factory.informer_for("pods", label_selector=selector)
        with pytest.raises(SelectorError):
            SharedInformerFactory(client, label_selector=selector)
    assert server.request_log == []
