"""The demo's fault script, as the summary and the display read it: the watch drop comes
before the compaction, both inside the run, and neither has happened before it starts."""

from __future__ import annotations

from aioinformer.cli._demo_scenario import scripted_faults


def test_the_demo_drops_the_watch_before_it_compacts_the_history() -> None:
    drop, compaction = scripted_faults()
    assert (drop.label, compaction.label) == ("watch drop", "410 compaction")
    assert 0 < drop.at_fraction < compaction.at_fraction < 1
    assert drop.happened_at is None
    assert compaction.happened_at is None


def test_each_run_gets_its_own_fault_records() -> None:
    first = scripted_faults()
    first[0].happened_at = 1.5
    assert scripted_faults()[0].happened_at is None
