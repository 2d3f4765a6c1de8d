"""label_index_func: an index by one label's value, read from a compact entry's head
without decoding it, and from any other object through its metadata."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer.indexer import CompactIndexer, Indexer, label_index_func
from aioinformer.models import KubeObject


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(pod("a", app="web"), ["web"], id="dict"),
        pytest.param(pod("a", tier="db"), [], id="dict-without-the-label"),
        pytest.param(CompactEntry.from_dict(pod("a", app="web")), ["web"], id="raw-object"),
        pytest.param(CompactEntry.from_dict(pod("a")), [], id="raw-object-without-labels"),
        pytest.param(KubeObject.model_validate(pod("a", app="web")), ["web"], id="model"),
    ],
)
def test_the_index_value_is_the_label_value(obj: Any, expected: list[str]) -> None:
    assert label_index_func("app")(obj) == expected


def test_the_function_says_which_label_it_indexes() -> None:
    assert getattr(label_index_func("app"), "__name__", None) == "label_index_func('app')"


@pytest.mark.parametrize("indexer_type", [Indexer, CompactIndexer])
def test_an_indexer_answers_by_label(indexer_type: type[Indexer[Any]]) -> None:
    indexer = indexer_type(indexers={"app": label_index_func("app")})
    indexer.add(pod("a", app="web"))
    indexer.add(pod("b", app="db"))
    indexer.update(pod("a", app="db"))
    assert sorted(indexer.index_keys("app", "db")) == ["default/a", "default/b"]
    assert indexer.list_index_func_values("app") == ["db"]


def test_a_compact_indexer_never_decodes_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[str] = []
    original = CompactEntry.decode

    def counting(self: CompactEntry) -> dict[str, Any]:
        decoded.append(self.key)
        return original(self)

    monkeypatch.setattr(CompactEntry, "decode", counting)
    indexer = CompactIndexer(indexers={"app": label_index_func("app")})
    indexer.put_entry("default/a", CompactEntry.from_dict(pod("a", app="web")))
    indexer.put_entry("default/a", CompactEntry.from_dict(pod("a", app="db")))
    indexer.add_indexers({"tier": label_index_func("tier")})
    indexer.delete_by_key("default/a")
    assert decoded == []
    # A function of the user's reading labels reads its view's head: no decode either.
    user = CompactIndexer(indexers={"app": lambda obj: [obj["metadata"]["labels"]["app"]]})
    user.put_entry("default/a", CompactEntry.from_dict(pod("a", app="web")))
    assert decoded == []
    assert user.index_keys("app", "web") == ["default/a"]
