"""Fixtures shared by the unit and end-to-end suites: ``cache`` runs a test once per cache
mode, ``source_type`` once per kind of fake source (see ``tests._support_cache``).

Also the Hypothesis profile of ``AIOINFORMER_PROPERTY_PROFILE`` (see
``tests._support_properties``): a ``@given`` test without settings of its own runs what
that profile makes of Hypothesis's 100 examples.
"""

from __future__ import annotations

from hypothesis import settings

from tests._support_cache import cache as cache
from tests._support_cache import source_type as source_type
from tests._support_properties import PROFILE, examples

settings.register_profile(f"aioinformer-{PROFILE}", max_examples=examples(100))
settings.load_profile(f"aioinformer-{PROFILE}")
