"""An index function is user code, and its mistakes never cost an object: one that raises,
or returns anything but a list of strings, leaves the object stored and in every other
index, absent from its own; the failure is logged once per index and key and counted. A
strict indexer refuses the write instead. Both stores (``Indexer``, the objects cache's,
and ``CompactIndexer``, the compact cache's) behave alike; the informer's side of it
(health, metrics, ``strict_indexes``) is in ``test_informer_index_failures.py``."""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import IndexerArgumentsError, IndexFuncError, IndexValuesError
from aioinformer.indexer import (
    NAMESPACE_INDEX,
    CompactIndexer,
    Indexer,
    IndexFunc,
    as_indexers,
    namespace_index_func,
)

if TYPE_CHECKING:
    from collections.abc import Callable

STORES = [
    pytest.param(Indexer, id="objects-store"),
    pytest.param(CompactIndexer, id="compact-store"),
]


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def by_team(obj: dict[str, Any]) -> list[str]:
    """The mistake of the report this suite comes from: it assumes every object has the
    label."""
    return [obj["metadata"]["labels"]["team"]]


def by_app(obj: dict[str, Any]) -> list[str]:
    app = obj["metadata"]["labels"].get("app")
    return [app] if app else []


INDEXERS: dict[str, IndexFunc] = {
    NAMESPACE_INDEX: namespace_index_func,
    "by-team": by_team,
    "by-app": by_app,
}


def values_of(store: Indexer[Any], name: str) -> dict[str, list[str]]:
    """An index as value -> sorted keys, through the public reads only."""
    return {value: store.index_keys(name, value) for value in store.list_index_func_values(name)}


def names(objs: list[Any]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in objs)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> Indexer[Any]:
    kind: type[Indexer[Any]] = request.param
    return kind(indexers=INDEXERS)


def failure_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "aioinformer.indexer"]


# -- the object is kept ----------------------------------------------------------------


def test_an_added_object_an_index_function_raises_on_is_stored_and_in_every_other_index(
    store: Indexer[Any],
) -> None:
    store.add(pod("web", team="a", app="shop"))
    store.add(pod("mirror", app="shop"))  # no team label: by_team raises KeyError
    assert names(store.list()) == ["mirror", "web"]
    assert store.get_by_key("default/mirror") == pod("mirror", app="shop")
    assert values_of(store, NAMESPACE_INDEX) == {"default": ["default/mirror", "default/web"]}
    assert values_of(store, "by-app") == {"shop": ["default/mirror", "default/web"]}
    # Absent from the failing index only, under no value at all.
    assert values_of(store, "by-team") == {"a": ["default/web"]}
    assert names(store.by_index("by-team", "a")) == ["web"]


def test_an_update_the_index_function_fails_on_takes_the_key_out_of_that_index_only(
    store: Indexer[Any],
) -> None:
    store.add(pod("web", team="a", app="shop"))
    store.update(pod("web", app="cart"))
    assert store.get_by_key("default/web") == pod("web", app="cart")
    assert values_of(store, "by-team") == {}
    assert values_of(store, "by-app") == {"cart": ["default/web"]}
    assert store.statistics().unindexed == 1
    # A later version the function succeeds on is indexed again.
    store.update(pod("web", team="b", app="cart"))
    assert values_of(store, "by-team") == {"b": ["default/web"]}
    assert store.statistics().unindexed == 0


def test_a_replace_keeps_the_listed_objects_an_index_function_fails_on(
    store: Indexer[Any],
) -> None:
    store.add(pod("old", team="a"))
    store.add(pod("web", team="a"))
    store.replace([pod("web"), pod("new", team="c")], "9")
    assert names(store.list()) == ["new", "web"]
    assert values_of(store, "by-team") == {"c": ["default/new"]}
    assert values_of(store, NAMESPACE_INDEX) == {"default": ["default/new", "default/web"]}
    assert store.statistics().unindexed == 1


def test_deleting_an_object_its_index_function_failed_on_leaves_nothing_behind(
    store: Indexer[Any],
) -> None:
    store.add(pod("web", app="shop"))
    store.delete_by_key("default/web")
    assert len(store) == 0
    assert all(values_of(store, name) == {} for name in INDEXERS)
    assert store.statistics().unindexed == 0
    store.replace([pod("a", app="x")], "1")
    store.replace([], "2")
    assert len(store) == 0
    assert store.statistics().unindexed == 0


def test_indexes_added_later_index_the_stored_objects_they_can_and_keep_the_others(
    request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    for kind in (Indexer, CompactIndexer):
        caplog.clear()
        store: Indexer[Any] = kind(indexers={NAMESPACE_INDEX: namespace_index_func})
        store.add(pod("web", team="a"))
        store.add(pod("mirror"))
        with caplog.at_level(logging.ERROR, logger="aioinformer.indexer"):
            store.add_indexers({"by-team": by_team, "by-app": by_app})
        assert names(store.list()) == ["mirror", "web"], kind
        assert values_of(store, "by-team") == {"a": ["default/web"]}, kind
        assert store.statistics().unindexed == 1, kind
        assert len(failure_logs(caplog)) == 1, kind
        # The index added later follows writes as one given at the start does.
        store.update(pod("mirror", team="b"))
        assert values_of(store, "by-team") == {"a": ["default/web"], "b": ["default/mirror"]}
        assert store.statistics().unindexed == 0, kind


# -- logged once per index and key, counted at every failure ----------------------------


def test_a_failure_is_logged_once_per_index_and_key_and_counted_every_time(
    store: Indexer[Any], caplog: pytest.LogCaptureFixture
) -> None:
    store.report_index_failures(source="informer pods")
    with caplog.at_level(logging.ERROR, logger="aioinformer.indexer"):
        for version in range(3):  # a hot object: one log, three failures
            store.update(pod("mirror", app=f"v{version}"))
        store.add(pod("other"))
    logs = failure_logs(caplog)
    assert logs == [
        "informer pods: index 'by-team' failed on default/mirror: KeyError: 'team'; the "
        "object is cached, absent from that index until its function succeeds on it",
        "informer pods: index 'by-team' failed on default/other: KeyError: 'team'; the "
        "object is cached, absent from that index until its function succeeds on it",
    ]
    # The traceback of the function's exception goes with it.
    record = next(r for r in caplog.records if r.name == "aioinformer.indexer")
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], KeyError)
    statistics = store.statistics()
    assert (statistics.items, statistics.index_errors, statistics.unindexed) == (2, 4, 2)
    assert isinstance(statistics.last_index_error, IndexFuncError)
    assert statistics.last_index_error.index == "by-team"
    assert statistics.last_index_error.key == "default/other"


def test_a_failure_after_the_function_succeeded_again_for_that_key_is_logged_again(
    store: Indexer[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="aioinformer.indexer"):
        store.add(pod("web"))
        store.update(pod("web", team="a"))
        store.update(pod("web"))
    assert len(failure_logs(caplog)) == 2
    assert store.statistics().index_errors == 2


def test_each_failing_index_of_one_object_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def by_owner(obj: dict[str, Any]) -> list[str]:
        return [obj["metadata"]["labels"]["owner"]]

    for kind in (Indexer, CompactIndexer):
        caplog.clear()
        store: Indexer[Any] = kind(indexers={"by-team": by_team, "by-owner": by_owner})
        with caplog.at_level(logging.ERROR, logger="aioinformer.indexer"):
            store.add(pod("web"))
            store.update(pod("web", owner="x"))  # by-owner succeeds now, by-team still fails
        assert [log.split(" failed")[0] for log in failure_logs(caplog)] == [
            "index 'by-team'",
            "index 'by-owner'",
        ], kind
        assert values_of(store, "by-owner") == {"x": ["default/web"]}, kind
        assert store.statistics().unindexed == 1, kind


# -- what an index function returns -----------------------------------------------------


def test_a_str_returned_is_refused_never_indexed_character_by_character(
    store: Indexer[Any],
) -> None:
    def team_as_str(obj: dict[str, Any]) -> list[str]:
        return obj["metadata"]["labels"]["team"]  # type: ignore[no-any-return]

    store.add_indexers({"team-str": team_as_str})
    store.add(pod("web", team="abc"))
    assert store.list_index_func_values("team-str") == []
    assert names(store.list()) == ["web"]
    error = store.statistics().last_index_error
    assert error is not None
    assert isinstance(error.error, IndexValuesError)
    assert isinstance(error.error, TypeError)
    assert str(error.error) == (
        "index function test_a_str_returned_is_refused_never_indexed_character_by_character"
        ".<locals>.team_as_str returned 'abc' (of type str, which would index each character): "
        "return a list of strings, e.g. ['abc']"
    )


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        pytest.param(None, "returned None: return a list of strings, e.g. [] for no value"),
        pytest.param([None], "returned a list holding None: return a list of strings, e.g. "),
        pytest.param({"a"}, "returned a set: return a list of strings, e.g. sorted(values)"),
        pytest.param(["a", 1], "returned a list holding 1 (of type int): return a list of strings"),
        pytest.param(b"a", "returned b'a' (of type bytes, which would index each character)"),
        pytest.param(iter(["a"]), "returned a list_iterator: return a list of strings"),
    ],
)
def test_anything_but_a_list_of_strings_is_refused_with_what_to_return(
    store: Indexer[Any], returned: Any, shown: str
) -> None:
    store.add_indexers({"bad": lambda obj: returned})
    store.add(pod("web", team="a"))
    assert store.list_index_func_values("bad") == []
    assert values_of(store, "by-team") == {"a": ["default/web"]}
    error = store.statistics().last_index_error
    assert error is not None
    assert isinstance(error.error, IndexValuesError)
    assert shown in str(error.error)


class Team(enum.StrEnum):
    A = "a"


@pytest.mark.parametrize(
    "returned",
    [
        pytest.param(("a", "b"), id="tuple"),
        pytest.param([Team.A, "b"], id="str-subclass"),
        pytest.param([], id="empty"),
    ],
)
def test_a_tuple_and_str_subclasses_are_strings_enough(store: Indexer[Any], returned: Any) -> None:
    store.add_indexers({"ok": lambda obj: returned})
    store.add(pod("web"))
    store.update(pod("web", team="a"))
    assert sorted(store.list_index_func_values("ok")) == sorted(str(v) for v in returned)
    assert store.statistics().index_errors == 1  # by-team, on the first version only


# -- strict: the write is refused -------------------------------------------------------


@pytest.mark.parametrize("kind", [Indexer, CompactIndexer])
def test_a_strict_store_refuses_the_write_and_leaves_everything_as_it_was(
    kind: type[Indexer[Any]],
) -> None:
    store: Indexer[Any] = kind(indexers=INDEXERS, strict=True)
    assert store.strict
    store.add(pod("web", team="a", app="shop"))
    with pytest.raises(
        IndexFuncError, match=r"^index 'by-team' failed on default/web: KeyError: 'team'$"
    ) as caught:
        store.update(pod("web", app="cart"))
    assert isinstance(caught.value.__cause__, KeyError)
    assert (caught.value.index, caught.value.key) == ("by-team", "default/web")
    assert store.get_by_key("default/web") == pod("web", team="a", app="shop")
    assert values_of(store, "by-app") == {"shop": ["default/web"]}
    with pytest.raises(IndexFuncError):
        store.add(pod("mirror"))
    assert store.get_by_key("default/mirror") is None
    assert store.statistics().index_errors == 2
    assert store.statistics().unindexed == 0


@pytest.mark.parametrize("kind", [Indexer, CompactIndexer])
def test_a_strict_store_adds_no_index_that_fails_on_a_stored_object(
    kind: type[Indexer[Any]],
) -> None:
    store: Indexer[Any] = kind(indexers={NAMESPACE_INDEX: namespace_index_func}, strict=True)
    store.add(pod("web", team="a"))
    store.add(pod("mirror"))
    with pytest.raises(IndexFuncError, match="index 'by-team' failed on default/mirror"):
        store.add_indexers({"by-app": by_app, "by-team": by_team})
    assert sorted(store.get_indexers()) == [NAMESPACE_INDEX]
    store.add(pod("late", app="x"))  # the indexer is as it was: writes go on
    assert values_of(store, NAMESPACE_INDEX) == {
        "default": ["default/late", "default/mirror", "default/web"]
    }


# -- indexers= must be a mapping --------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param(
            by_team,
            "indexers= takes a mapping of index names to index functions, not the function "
            "by_team itself: write indexers={'by_team': by_team}",
            id="a-function",
        ),
        pytest.param(
            [by_team],
            "indexers= takes a mapping of index names to index functions, not a list: "
            "write indexers={'by-team': by_team}",
            id="a-list",
        ),
        pytest.param(
            {"by-team": "team"},
            "index 'by-team' maps to a str, not an index function",
            id="a-value-not-callable",
        ),
        pytest.param({1: by_team}, "an index name must be a str, not 1", id="a-name-not-str"),
    ],
)
def test_indexers_given_anything_but_a_mapping_of_names_to_functions_say_what_to_write(
    given: Any, message: str
) -> None:
    makers: list[Callable[[], object]] = [
        lambda: Indexer(indexers=given),
        lambda: CompactIndexer(indexers=given),
        lambda: Indexer().add_indexers(given),
        lambda: CompactIndexer().add_indexers(given),
        lambda: as_indexers(given),
    ]
    for make in makers:
        with pytest.raises(IndexerArgumentsError, match="^" + message.replace("(", r"\(")):
            make()
    assert issubclass(IndexerArgumentsError, TypeError)


def test_as_indexers_copies_a_mapping_and_takes_none() -> None:
    given = {"by-team": by_team}
    checked = as_indexers(given)
    assert checked == given
    assert checked is not given
    assert as_indexers(None) == {}


def test_a_read_through_an_index_function_checks_what_it_returns(store: Indexer[Any]) -> None:
    store.add_indexers({"str": lambda obj: "ab"})  # type: ignore[dict-item]
    with pytest.raises(IndexValuesError, match="return a list of strings"):
        store.index("str", pod("web"))
