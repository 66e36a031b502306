"""The `--remote` retry budget, driven by pyspark's own retry loop (`Retrying`) with a clock the test
moves: how long a call is retried, from when, and that a command gives up once."""

from __future__ import annotations

import socket
from concurrent import futures
from types import SimpleNamespace

import grpc
import pytest
from pyspark.sql.connect.client.retries import Retrying

from pipelines.local import retries


class Clock:
    """Monotonic seconds that move only when the retry loop sleeps or the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def grpc_error(target: str, timeout: float | None = None) -> grpc.RpcError:
    """A real gRPC error: a call to `target` over a real channel."""
    with grpc.insecure_channel(target) as channel:
        ping = channel.unary_unary("/lakewatch.Test/Ping", request_serializer=None, response_deserializer=None)
        try:
            ping(b"", timeout=timeout)
        except grpc.RpcError as e:
            return e
    raise AssertionError(f"{target} answered")


@pytest.fixture(scope="module")
def unavailable() -> grpc.RpcError:
    """What a server that is gone gives: UNAVAILABLE, Connection refused (the status the default policy retries)."""
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return grpc_error(f"127.0.0.1:{port}")


@pytest.fixture(scope="module")
def unimplemented() -> grpc.RpcError:
    """A server that answers with an error the default policy does not retry: UNIMPLEMENTED."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        return grpc_error(f"127.0.0.1:{port}", timeout=10)
    finally:
        server.stop(None)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(retries, "time", SimpleNamespace(monotonic=c.monotonic))
    return c


def call(policy: retries.WithinBudget, clock: Clock, failures: int | None, error: Exception,
         work_seconds: float = 0.0) -> int:
    """Runs one call through pyspark's retry loop: it fails `failures` times (None: always), each
    attempt taking `work_seconds`; returns the attempts made, raising what the loop raised."""
    attempts = 0
    for attempt in Retrying([policy], sleep=clock.sleep):
        with attempt:
            attempts += 1
            clock.now += work_seconds
            if failures is None or attempts <= failures:
                raise error
    return attempts


def test_a_call_is_retried_for_the_budget_and_no_longer(clock, unavailable):
    policy = retries.WithinBudget(30)
    start = clock.now
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unavailable)
    assert clock.now - start == pytest.approx(30, abs=0.01)  # the last wait is cut to what was left
    assert len(clock.sleeps) > 3  # backed off several times, not one wait of 30 s
    assert policy.gave_up.startswith("UNAVAILABLE: ") and "Connection refused" in policy.gave_up


def test_a_call_that_recovers_within_the_budget_succeeds_and_nothing_gave_up(clock, unavailable):
    policy = retries.WithinBudget(30)
    assert call(policy, clock, failures=3, error=unavailable) == 4
    assert policy.gave_up is None


def test_the_budget_runs_from_the_first_failure_not_the_start_of_the_call(clock, unavailable):
    """A stream that answered for ten minutes, then lost its server, still gets the whole budget."""
    policy = retries.WithinBudget(30)
    clock.now += 600  # the call's first attempt ran for ten minutes before failing
    first_failure = clock.now
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unavailable)
    assert clock.now - first_failure == pytest.approx(30, abs=0.01)


def test_after_one_call_gave_up_later_calls_fail_at_once(clock, unavailable):
    policy = retries.WithinBudget(30)
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unavailable)
    waited = len(clock.sleeps)
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unavailable)
    assert len(clock.sleeps) == waited  # no wait at all for the second call


def test_errors_the_default_policy_does_not_retry_are_not_retried(clock, unimplemented):
    policy = retries.WithinBudget(30)
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unimplemented)
    assert clock.sleeps == [] and policy.gave_up is None


def test_a_zero_budget_retries_nothing(clock, unavailable):
    policy = retries.WithinBudget(0)
    with pytest.raises(grpc.RpcError):
        call(policy, clock, failures=None, error=unavailable)
    assert clock.sleeps == [] and policy.gave_up is not None


@pytest.mark.parametrize("raw, seconds", [("", 60.0), ("0", 0.0), ("2.5", 2.5)])
def test_the_budget_comes_from_the_environment(monkeypatch, raw, seconds):
    monkeypatch.setenv(retries.REMOTE_RETRY_ENV, raw)
    assert retries.remote_retry_seconds() == seconds
