"""What the CLI prints, on a real small state: each verb's result alone on stdout in its documented
JSON shape, progress on stderr, `--limit` honoured in both formats, DECIMAL exact in JSON."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from tests.integration.helpers import Cli
from tests.unit.test_console import documented_keys

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One batch of files and one update of the ingest pipeline, on a fresh state folder."""
    cli = Cli(tmp_path_factory.mktemp("cli_output"))
    generated = cli.run("generate", "--batches", "1", "--rows", "20", "-o", "json")
    run = cli.run("run", "-o", "json")
    return {"cli": cli, "generated": generated, "run": run}


def test_generate_prints_the_files_it_wrote(small):
    document = json.loads(small["generated"].stdout)
    assert set(document) == {"landing_root", "manifest", "files"}
    manifest = json.loads(Path(document["manifest"]).read_text())
    assert sorted(f["path"] for f in document["files"]) == sorted(f["path"] for f in manifest["files"])
    for f in document["files"]:
        assert set(f) == {"table", "path", "batch", "lines", "bytes", "complete"}
        assert f["path"].startswith(document["landing_root"]) and Path(f["path"]).stat().st_size == f["bytes"]
    assert "batch 1 of 1: " in small["generated"].stderr


def test_run_prints_its_update_as_documented_and_progress_on_stderr(small):
    document = json.loads(small["run"].stdout)  # stdout holds the JSON document and nothing else
    assert set(document) == set(documented_keys("run"))
    assert document["state"] == "COMPLETED" and document["error"] is None and document["insight"] is None
    flows = {f["name"]: f for f in document["flows"]}
    assert {"orders_bronze", "orders"} <= set(flows)
    assert all(f["status"] == "COMPLETED" for f in flows.values())
    [bronze] = json.loads(small["cli"].run("query", "SELECT count(*) AS n FROM orders_bronze", "--json").stdout)
    assert flows["orders_bronze"]["rows_written"] == bronze["n"] > 0
    assert f"starting update {document['update_id'][:8]}" in small["run"].stderr
    assert re.search(r"^\s+\d\d:\d\d:\d\d\s+orders_bronze\s+COMPLETED", small["run"].stderr, re.M)


def test_query_honours_the_limit_in_both_formats_and_keeps_decimals_exact(small):
    cli = small["cli"]
    sql = "SELECT id, CAST('12345678901234567.891' AS DECIMAL(20,3)) + id AS d FROM range(10) ORDER BY id"
    rows = json.loads(cli.run("query", sql, "--limit", "3", "-o", "json").stdout)
    assert rows == [{"id": i, "d": str(Decimal("12345678901234567.891") + i)} for i in range(3)]
    assert len(json.loads(cli.run("query", sql, "--json").stdout)) == 10  # JSON without --limit: every row
    text = cli.run("query", sql, "--limit", "3").stdout
    shown = re.findall(r"^\|\s*(\d+)\|", text, re.M)
    assert shown == ["0", "1", "2"] and "12345678901234567.891" in text and "only showing top 3 rows" in text
    bronze = json.loads(cli.run("query", "SELECT * FROM orders_bronze", "--limit", "2", "-o", "json").stdout)
    assert len(bronze) == 2 and "_rescued_data" in bronze[0]


def test_engine_status_prints_its_documented_keys(small):
    document = json.loads(small["cli"].run("engine", "status", "-o", "json").stdout)
    assert set(document) == {"action", "home", "running", "pid", "url", "uptime_seconds", "clients", "idle_seconds",
                             "log_file", "patches"}
    assert document["running"] is True and document["url"].startswith("sc://127.0.0.1:")
    assert all(set(p) == {"name", "active", "why"} for p in document["patches"])
