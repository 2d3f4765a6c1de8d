"""What earlier lists and watches taught a reflector about its next list request.

Role: the reflector's memory between lists. Input: the outcome of each list (did the
first list at ``"0"`` come back in pages?) and of each list or watch failure (was the
resourceVersion expired or too large?). Output: the resourceVersion and page size of
the next list. Sync, owned by one reflector and used only in its task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_PAGE_SIZE", "ListPolicy"]

DEFAULT_PAGE_SIZE: Final = 500
"""Page size of lists that are paginated without an explicit ``page_size``."""


@dataclass(slots=True)
class ListPolicy:
    """What earlier lists and watches taught about the next list's request."""

    rv_unavailable: bool = False
    """A list or watch failed because the last resourceVersion was expired or too large:
    the next list (or streaming list) asks for ``""``, a consistent read. Cleared once a
    list succeeds."""
    paginated_result: bool = False
    """The first list at ``"0"`` came back in pages: the server has no watch cache, so
    later lists are paginated too. Never cleared."""

    def resource_version(self, last_synced: str) -> str:
        """The resourceVersion a (re)list asks for, after ``last_synced``."""
        if self.rv_unavailable:
            return ""
        return last_synced or "0"

    def limit(self, resource_version: str, page_size: int | None) -> int | None:
        """The page size of a list at ``resource_version``; ``None``: unpaginated."""
        if page_size is not None:
            return page_size
        if self.paginated_result:
            return DEFAULT_PAGE_SIZE
        if resource_version not in ("", "0"):
            # Unpaginated lists at a resourceVersion are served from the watch cache:
            # no thundering herd on etcd after, say, an API server restart.
            return None
        return DEFAULT_PAGE_SIZE
