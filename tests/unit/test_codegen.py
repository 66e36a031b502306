"""The local update's choice between compiled and interpreted expressions (pipelines/local/codegen.py)."""

from pipelines.local.codegen import FACTORY_MODE, INTERPRETED, choose

MB = 1024 * 1024


def test_a_small_backlog_interprets_expressions():
    assert choose([10_000, 0, 2 * MB], {}, threshold=4 * MB).settings == {FACTORY_MODE: INTERPRETED}


def test_no_file_source_interprets_expressions():
    assert choose([], {}).settings == {FACTORY_MODE: INTERPRETED}


def test_a_backlog_at_the_threshold_keeps_compiled_expressions():
    choice = choose([3 * MB, 1 * MB], {}, threshold=4 * MB)
    assert choice.settings == {} and str(4 * MB) in choice.reason


def test_an_unknown_backlog_keeps_compiled_expressions():
    assert choose([100, None], {}).settings == {}


def test_a_mode_set_in_the_pipeline_configuration_is_kept():
    choice = choose([100], {FACTORY_MODE: "CODEGEN_ONLY"})
    assert choice.settings == {} and "pipeline configuration" in choice.reason
