"""The polling setting each update runs with (pipelines/local/polling.py)."""

from __future__ import annotations

import pytest

from pipelines.local import polling
from pipelines.local.codegen import SMALL_UPDATE_BYTES

SLEEPLESS = {polling.POLLING_INTERVAL: polling.WITHOUT_SLEEP}
EVERY_SECOND = {polling.POLLING_INTERVAL: polling.EVERY_SECOND}


@pytest.mark.parametrize("backlogs, expected", [
    ([0, 0, 0], SLEEPLESS),  # nothing new anywhere
    ([1000, 0, SMALL_UPDATE_BYTES - 1001], SLEEPLESS),  # just under the threshold in all
    ([SMALL_UPDATE_BYTES // 2, SMALL_UPDATE_BYTES // 2], EVERY_SECOND),  # the sum reaches it
    ([0, None], EVERY_SECOND),  # one source's backlog unknown
    ([], EVERY_SECOND),  # no landing files (the observability refresh)
])
def test_only_a_small_known_backlog_polls_without_sleeping(backlogs, expected):
    assert polling.choose(backlogs, {}) == expected


def test_a_setting_in_the_pipeline_configuration_is_kept():
    assert polling.choose([0], {polling.POLLING_INTERVAL: "2"}) == {}
