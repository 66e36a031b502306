"""The graph the local engine records while definitions register goes to the `LocalGraph` the runner
installs for that registration (`local_adapter.recording`), and nowhere else: no graph is shared between
updates or kept outside one."""

from __future__ import annotations

import threading

from pipelines.local import adapter as local_adapter


def test_what_registers_inside_a_recording_goes_to_its_graph_and_nested_ones_are_restored():
    first, second = local_adapter.LocalGraph(), local_adapter.LocalGraph()
    engine = local_adapter.LocalEngine()
    with local_adapter.recording(first):
        engine.register_file_source("orders_bronze", "/landing/orders", "json:lines")
        with local_adapter.recording(second):
            engine.register_file_source("payments_bronze", "/landing/payments", "csv:header")
        engine.register_file_source("customers_bronze", "/landing/customers", "json:lines")
    assert first.file_sources == {"orders_bronze": "/landing/orders", "customers_bronze": "/landing/customers"}
    assert first.record_counters == {"orders_bronze": "json:lines", "customers_bronze": "json:lines"}
    assert second.file_sources == {"payments_bronze": "/landing/payments"}


def test_outside_a_recording_nothing_is_kept():
    engine = local_adapter.LocalEngine()
    engine.register_file_source("orders_bronze", "/landing/orders", "json:lines")
    assert local_adapter.recorded_graph().file_sources == {}  # a fresh graph each time: no global one
    graph = local_adapter.LocalGraph()
    with local_adapter.recording(graph):
        pass
    assert graph.file_sources == {}


def test_a_recording_is_the_registering_threads_alone():
    graph = local_adapter.LocalGraph()
    seen: list[local_adapter.LocalGraph] = []
    with local_adapter.recording(graph):
        other = threading.Thread(target=lambda: seen.append(local_adapter.recorded_graph()))
        other.start()
        other.join()
        assert local_adapter.recorded_graph() is graph
    assert seen and seen[0] is not graph
