"""Your own files, step by step as docs/getting-started.md ("Your own data") shows them, then the demo
in the same project (tests/integration/own_project.py runs the steps once for this module and
test_demo). Oracles: the records the test writes, counted by the test; the files' bytes (hashes) and
the bronze row counts before and after the demo."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.helpers import corrupt_lines_on_disk, local_path
from tests.integration.own_project import DRIFTED, SHIPMENTS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def own(own_data):
    return own_data


def test_add_table_infers_each_format_and_suggests_key_expectations(own):
    tables = {t["name"]: t for t in own["config"]["tables"]}
    assert [t["name"] for t in own["config"]["tables"]][:3] == ["orders", "customers", "payments"]
    assert tables["shipments"]["format"] == "json" and tables["shipments"]["landing"] == "shipments"
    assert tables["shipments"]["schema"] == {"carrier": "STRING", "delivered": "BOOLEAN", "order_id": "BIGINT",
                                             "shipment_id": "BIGINT", "shipped_at": "TIMESTAMP", "weight_kg": "DOUBLE"}
    assert tables["stock_levels"]["schema"] == {"sku": "STRING", "warehouse_id": "INT", "quantity": "INT",
                                                "counted_on": "DATE"}
    assert tables["sensor_readings"]["schema"] == {"reading_id": "BIGINT", "sensor": "STRING", "value": "DOUBLE",
                                                   "read_at": "TIMESTAMP"}
    drops = {t: {e["condition"] for e in tables[t].get("expectations", []) if e["action"] == "drop"} for t in tables}
    assert {"shipment_id IS NOT NULL", "order_id IS NOT NULL"} <= drops["shipments"]
    assert {"sku IS NOT NULL", "warehouse_id IS NOT NULL"} <= drops["stock_levels"]
    assert "reading_id IS NOT NULL" in drops["sensor_readings"]
    # the file's own comments and entries are kept
    before = own["before"]
    after = (own["project"].root / "conf" / "tables.yml").read_text()
    assert after.startswith(before.split("tables:")[0])
    assert "  - name: payments" in after
    # a unique TIMESTAMP or DOUBLE is no key: no drop expectation, a comment at most
    assert not drops["shipments"] & {"shipped_at IS NOT NULL", "weight_kg IS NOT NULL"}


def test_check_prints_the_landing_root_and_its_folders(own):
    out = own["check"]
    assert f"landing root: {own['exports']}" in out
    for name in ("shipments", "stock_levels", "sensor_readings"):
        assert f"{own['exports'] / name}  exists" in out
    assert f"landing root: {own['exports']}" in own["job"] and f"landing root: {own['exports']}" in own["run"]


def test_every_record_lands_in_bronze_once(own):
    for row in own["bronze"]:
        expected = 2 * SHIPMENTS if row["t"] == "shipments" else own["written"][row["t"]]
        assert (row["t"], row["n"], row["k"]) == (row["t"], expected, expected)


def test_drift_lists_the_extra_field_then_applies_it(own):
    out = own["drift"]
    line = next(line for line in out.splitlines() if line.strip().startswith("priority"))
    assert line.split()[:3] == ["priority", "BIGINT", str(DRIFTED)] and "new" in line
    assert "ship-002.json" in out and "ship-001.json" not in out
    assert "priority BIGINT" in own["apply"]
    assert "  priority: BIGINT" in (own["project"].root / "conf" / "tables.yml").read_text()
    assert "in schema" in own["after_apply"]
    assert f"{DRIFTED} rows keep it in _rescued_data until a full refresh" in own["after_apply"]
    # the full refresh read both files again: the rows from before the change fill the column
    assert own["refreshed"] == [{"n": 2 * SHIPMENTS, "filled": DRIFTED, "rescued": 0}]
    # a file after the change fills it in the next update
    assert own["filled"] == [{"n": 30, "filled": 30, "rescued": 0}]


def test_the_demo_leaves_the_users_files_and_tables_alone(own):
    assert "DEMO_HOME_IN_USE" in own["refused"]
    assert "the demo ran as intended" in own["demo"]
    assert f"{own['project'].root / '.lakewatch-demo'}" in own["demo"]
    assert own["files_after"] == own["files_before"]
    # the user's records, and the lines docs/cli.md's `generate` wrote into their folders (its manifest)
    generated: Counter = Counter()
    for f in json.loads((own["exports"] / "_manifest.json").read_text())["files"]:
        generated[f["table"]] += sum(f["lines"].values()) if f["complete"] else 0
    expected = {t: n + generated[t] for t, n in own["written"].items()}
    assert own["counts_after"] == own["counts_before"] == expected
    assert sorted(p.name for p in (own["project"].root / ".lakewatch").iterdir()) == own["home_before"]


def test_add_table_and_drift_print_their_results_as_documented_json(own):
    """`-o json`: one document on standard output, the narrative on standard error; the dry run's entry
    is the one the file holds (nothing written), drift's fields are those the text listing gave."""
    out, err = own["add_json"]
    document = json.loads(out)
    written = {t["name"]: t for t in own["config"]["tables"]}["shipments"]
    assert (document["table"], document["written"], document["replaced"]) == ("shipments", False, True)
    assert document["schema"] == written["schema"] and document["format"] == written["format"] == "json"
    assert {e["condition"] for e in document["expectations"]} == {e["condition"] for e in written["expectations"]}
    assert "adding" in err or "replacing" in err
    out, _ = own["drift_json"]
    tables = {t["table"]: t for t in json.loads(out)}
    assert set(tables) == {t["name"] for t in own["config"]["tables"]}
    priority = next(f for f in tables["shipments"]["fields"] if f["name"] == "priority")
    assert (priority["type"], priority["rows"], priority["kind"]) == ("BIGINT", DRIFTED, "new")


# -- every command the README and docs show runs in `make test` --------------------------------------
def test_every_command_the_docs_show_runs_as_shown(own):
    """Those that only read run on the demo's state (test_demo), the `--remote` one against a server
    (test_remote), every other one here, as shown (the test's folders for the reader's)."""
    from tests.docs_commands import lakewatch_commands, read_only_on_demo_state

    on_demo = {tuple(shown) for _, _, shown in read_only_on_demo_state()}
    not_run = [f"{where}: lakewatch {' '.join(args)}" for where, args in lakewatch_commands()
               if "--remote" not in args and tuple(args) not in on_demo and tuple(args) not in own["documented"]]
    assert not not_run, "shown but run by no test:\n" + "\n".join(not_run)


def test_documented_json_results_have_their_documented_keys(own):
    """docs/cli.md's `-o json` shapes, for the commands it shows with `-o json` that write."""
    out, _ = own["documented"][("run", "lakewatch_observability", "-o", "json")]
    update = json.loads(out)
    assert {"update_id", "pipeline", "state", "started_at", "ended_at", "duration_seconds", "flows", "error",
            "insight"} <= set(update)
    assert update["state"] == "COMPLETED" and update["error"] is None and update["flows"]
    out, _ = own["documented"][("generate", "--mix", "malformed=0.1,empty_file=0", "--table", "orders", "-o", "json")]
    generated = json.loads(out)
    assert generated["landing_root"] == str(own["exports"]) and generated["files"]
    assert {f["table"] for f in generated["files"]} == {"orders"}
    for file in generated["files"]:  # the test's own count of each file's lines
        path = own["exports"] / file["path"] if not file["path"].startswith("/") else Path(file["path"])
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        assert sum(file["lines"].values()) == data.count(b"\n"), file


def test_the_documented_writes_did_what_they_say(own):
    docs = own["documented"]
    assert "timings:" in "".join(docs[("run", "--verbose")])
    # `drift orders --apply promo_code` added the field to orders' schema (put back before the demo)
    orders = {t["name"]: t for t in own["applied_to_orders"]["tables"]}["orders"]
    assert "promo_code" in orders["schema"]
    assert "promo_code" not in (own["project"].root / "conf" / "tables.yml").read_text()
    # the dry run wrote nothing
    out, err = docs[("add-table", "events", "--from", "~/samples/events.json.gz", "--landing", "events",
                     "--all-strings", "--dry-run")]
    assert "event_id" in out + err and "events" not in {t["name"] for t in own["applied_to_orders"]["tables"]}
    # before them, each of the user's records in bronze once (after them: the demo's test above)
    assert own["counts_before_writes"] == own["written"]
    assert docs[("--version",)][0].startswith("lakewatch ")
    assert "usage:" in docs[("--help",)][0] and "--full-refresh-all" in docs[("run", "--help")][0]


def test_updates_after_the_documented_full_refreshes_quarantine_every_corrupt_line(own):
    """`run --full-refresh orders_bronze,orders,orders_rejected` rewrites bronze under the flow into
    corrupt_records_sink (a selection cannot name it); the updates after it complete, and every
    malformed line of the generated orders files (the test's own reading of them) is in the sink."""
    manifest = json.loads((own["exports"] / "_manifest.json").read_text())
    expected = corrupt_lines_on_disk(manifest, "orders")
    quarantined = {(local_path(r["_source_file"]), r["_record_hash"]) for r in own["orders_quarantine"]}
    assert expected and quarantined == set(expected)
