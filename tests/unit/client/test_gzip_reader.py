"""The gzip reader: a body of any number of members, in any chunking, inflated whole and in
bounded pieces; bodies cut short or followed by garbage refused; the codings it reads."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.client._encoding import PIECE_SIZE, CompressedBodyError, GzipReader, body_reader
from tests._support_gzip import CUT, LINES, PER_EVENT, member


def read_all(reader: GzipReader, chunks: list[bytes]) -> bytes:
    pieces = [piece for chunk in chunks for piece in reader.feed(chunk)]
    pieces.extend(reader.finish())
    return b"".join(pieces)


@given(st.lists(st.integers(min_value=0, max_value=len(PER_EVENT)), max_size=12))
def test_a_body_of_many_members_inflates_whole_whatever_the_chunking(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(PER_EVENT)]
    chunks = [PER_EVENT[a:b] for a, b in itertools.pairwise(points)]
    assert read_all(GzipReader(), chunks) == b"".join(LINES)


def test_members_ending_in_one_chunk_come_out_as_one_piece() -> None:
    # A read of the connection holding many events stays one batch downstream.
    assert list(GzipReader().feed(PER_EVENT)) == [b"".join(LINES)]


def test_a_body_that_inflates_to_gigabytes_comes_out_in_bounded_pieces() -> None:
    bomb = member(b"\0" * (16 * PIECE_SIZE))
    assert len(bomb) < PIECE_SIZE // 8
    reader = GzipReader()
    sizes = [len(piece) for piece in reader.feed(bomb)]
    sizes.extend(len(piece) for piece in reader.finish())
    assert sum(sizes) == 16 * PIECE_SIZE
    assert max(sizes) < 2 * PIECE_SIZE


def test_an_empty_body_is_sound() -> None:
    assert read_all(GzipReader(), []) == b""
    assert read_all(GzipReader(), [b""]) == b""


def test_a_body_cut_inside_a_member_fails_at_its_end() -> None:
    reader = GzipReader()
    assert b"".join(reader.feed(CUT)).startswith(b"".join(LINES[:-1]))
    with pytest.raises(CompressedBodyError, match="middle of a member"):
        list(reader.finish())
    # Only the trailer missing: the data is all there, the body still ended too soon.
    reader = GzipReader()
    assert b"".join(reader.feed(PER_EVENT[:-3])) == b"".join(LINES)
    with pytest.raises(CompressedBodyError, match="middle of a member"):
        list(reader.finish())


def test_what_follows_a_member_must_be_another_member() -> None:
    reader = GzipReader()
    with pytest.raises(CompressedBodyError, match="corrupt"):
        list(reader.feed(member(LINES[0]) + b'{"type":"ADDED"}\n'))


@pytest.mark.parametrize("header", [None, "", "identity", " Identity "])
def test_a_body_sent_as_is_needs_no_reader(header: str | None) -> None:
    assert body_reader(header) is None


@pytest.mark.parametrize("header", ["gzip", "x-gzip", "GZIP"])
def test_a_gzip_body_gets_a_reader(header: str) -> None:
    assert isinstance(body_reader(header), GzipReader)


@pytest.mark.parametrize("header", ["deflate", "br", "zstd", "gzip, gzip"])
def test_a_coding_the_client_never_asks_for_is_refused(header: str) -> None:
    with pytest.raises(CompressedBodyError, match="reads only gzip and uncompressed"):
        body_reader(header)
