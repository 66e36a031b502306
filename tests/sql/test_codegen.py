"""The local update's choice between compiled and interpreted expressions (pipelines/local/codegen.py)."""

import os
from pathlib import Path

from pipelines.adapter import LANDING_ROOT_KEY, TABLES_CONFIG_KEY
from pipelines.local.checkpoints import flow_checkpoint_root
from pipelines.local.codegen import COMPILED, FACTORY_MODE, INTERPRETED, choose, landing_backlogs

MB = 1024 * 1024


def test_a_small_backlog_interprets_expressions():
    assert choose([10_000, 0, 2 * MB], {}, threshold=4 * MB).settings == {FACTORY_MODE: INTERPRETED}


def test_no_file_source_interprets_expressions():
    assert choose([], {}).settings == {FACTORY_MODE: INTERPRETED}


def test_a_backlog_at_the_threshold_keeps_compiled_expressions():
    choice = choose([3 * MB, 1 * MB], {}, threshold=4 * MB)
    assert choice.settings == {FACTORY_MODE: COMPILED} and str(4 * MB) in choice.reason


def test_an_unknown_backlog_keeps_compiled_expressions():
    assert choose([100, None], {}).settings == {FACTORY_MODE: COMPILED}


def test_a_mode_set_in_the_pipeline_configuration_is_kept():
    choice = choose([100], {FACTORY_MODE: "CODEGEN_ONLY"})
    assert choice.settings == {} and "pipeline configuration" in choice.reason


TABLES_YML = """\
tables:
  - name: orders
    format: json
    landing: orders
    schema:
      order_id: BIGINT
  - name: customers
    format: json
    landing: customers
    schema:
      customer_id: BIGINT
"""


def commit_with_a_file_stream(spark, folder: Path, checkpoint: Path) -> None:
    """What a bronze flow leaves behind: Spark's own file stream commits every file in `folder`."""
    query = (spark.readStream.format("text").load(str(folder)).writeStream.format("noop")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()


def test_the_backlog_is_what_each_bronze_flow_has_not_committed_yet(spark, tmp_path):
    landing, storage = tmp_path / "landing", tmp_path / "storage"
    tables_file = tmp_path / "tables.yml"
    tables_file.write_text(TABLES_YML)
    conf = {TABLES_CONFIG_KEY: str(tables_file), LANDING_ROOT_KEY: str(landing)}
    (landing / "orders").mkdir(parents=True)
    (landing / "orders" / "a.json").write_text('{"order_id": 1}\n' * 50)
    root = flow_checkpoint_root(storage, "orders_bronze", "orders_bronze", "spark_catalog", "lakewatch", False)
    commit_with_a_file_stream(spark, landing / "orders", root / "0")
    late = landing / "orders" / "b.json"
    late.write_text('{"order_id": 2}\n' * 7)

    backlogs = landing_backlogs(conf, storage, "spark_catalog", "lakewatch")

    # orders: only the file the stream has not committed; customers: no landing folder, nothing to read
    assert backlogs == [os.path.getsize(late), 0]
    assert choose(backlogs, conf).settings == {FACTORY_MODE: INTERPRETED}


def test_a_pipeline_without_landing_files_has_no_file_source_and_a_broken_tables_file_is_unknown(tmp_path):
    assert landing_backlogs({}, tmp_path, None, None) == []
    broken = tmp_path / "tables.yml"
    broken.write_text("tables: [")
    assert landing_backlogs({TABLES_CONFIG_KEY: str(broken), LANDING_ROOT_KEY: str(tmp_path)}, tmp_path, None, None) == [None]
