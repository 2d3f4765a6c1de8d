"""Fixtures shared by the unit and end-to-end suites: ``cache`` runs a test once per cache
mode, ``source_type`` once per kind of fake source (see ``tests._support_cache``)."""

from __future__ import annotations

from tests._support_cache import cache as cache
from tests._support_cache import source_type as source_type
