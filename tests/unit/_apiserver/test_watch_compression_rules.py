"""Which watches kube-apiserver 1.37 compresses: streaming lists (after its defaulting of
``sendInitialEvents``) sent with an ``Accept-Encoding`` that names gzip, and nothing else.

The cases follow kube-apiserver's ``TestWatchServerCompression`` and its
``ContentEncodingSupported`` parsing, and the defaulting (``SetListOptionsDefaults``) that
turns a plain watch from ``""`` or ``"0"`` into a streaming list.
"""

from __future__ import annotations

import pytest

from aioinformer._apiserver.requests import WatchListSupport, accepts_gzip, streams_a_list

BOOKMARKS = {"watch": "1", "allowWatchBookmarks": "true"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            {**BOOKMARKS, "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"},
            True,
            id="streaming-list",
        ),
        pytest.param(
            {
                **BOOKMARKS,
                "sendInitialEvents": "true",
                "resourceVersionMatch": "NotOlderThan",
                "resourceVersion": "42",
            },
            True,
            id="streaming-list-from-a-version",
        ),
        pytest.param(BOOKMARKS, True, id="plain-watch-from-unset-is-defaulted-to-one"),
        pytest.param(
            {**BOOKMARKS, "resourceVersion": "0"}, True, id="plain-watch-from-0-is-defaulted"
        ),
        pytest.param(
            {**BOOKMARKS, "resourceVersion": ""}, True, id="plain-watch-from-empty-is-defaulted"
        ),
        pytest.param(
            {**BOOKMARKS, "resourceVersion": "42"}, False, id="plain-watch-from-a-version"
        ),
        pytest.param(
            {
                **BOOKMARKS,
                "sendInitialEvents": "false",
                "resourceVersionMatch": "NotOlderThan",
                "resourceVersion": "0",
            },
            False,
            id="initial-events-refused",
        ),
        pytest.param({"watch": "1"}, False, id="no-bookmarks"),
        pytest.param(
            {"watch": "1", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"},
            False,
            id="initial-events-without-bookmarks",
        ),
        pytest.param(
            {**BOOKMARKS, "resourceVersionMatch": "NotOlderThan", "resourceVersion": "0"},
            False,
            id="a-version-match-stops-the-defaulting",
        ),
    ],
)
def test_a_watch_is_a_streaming_list_as_kube_apiserver_counts_them(
    query: dict[str, str], expected: bool
) -> None:
    assert streams_a_list(query, watch_list="supported") is expected


@pytest.mark.parametrize("support", ["forbidden", "ignored"])
def test_a_server_without_streaming_lists_has_none_to_compress(support: WatchListSupport) -> None:
    streaming = {**BOOKMARKS, "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}
    assert streams_a_list(streaming, watch_list=support) is False
    assert streams_a_list(BOOKMARKS, watch_list=support) is False


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("gzip", True, id="gzip"),
        pytest.param("deflate, gzip", True, id="gzip-among-others"),
        pytest.param("gzip, deflate, br, zstd", True, id="aiohttp-default"),
        pytest.param(" gzip ,identity", True, id="spaces-trimmed"),
        pytest.param("", False, id="none"),
        pytest.param("identity", False, id="identity"),
        pytest.param("deflate, br", False, id="other-codings"),
        pytest.param("gzip;q=1.0", False, id="q-values-not-read"),
        pytest.param("*", False, id="wildcard-not-read"),
        pytest.param("GZIP", False, id="case-sensitive"),
    ],
)
def test_accept_encoding_is_read_as_kube_apiserver_reads_it(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected
