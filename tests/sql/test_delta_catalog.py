"""Delta's catalog without a commit for an ALTER TABLE that changes nothing (pipelines/local/delta_catalog.py).

Oracles: the table's own Delta history (`DESCRIBE HISTORY`) and properties (`SHOW TBLPROPERTIES`),
and Delta's own `DeltaCatalog` given the same call, which commits where lakewatch's must not. The calls
are `alterTable` with `TableChange.setProperty`, as open-source SDP's `DatasetManager` makes them at
every update."""

from __future__ import annotations

import os

import pytest

from pipelines.local import delta_catalog, jars, javalib, patches, session


@pytest.fixture(scope="module")
def jvm(spark):
    if delta_catalog.LIBRARY.current_jar() is None:
        pytest.fail(f"make setup built no {delta_catalog.LIBRARY.jar_name} from the current sources "
                    f"({delta_catalog.LIBRARY.build_failure() or 'python -m pipelines.local.patches says why'})")
    return spark._jvm


@pytest.fixture
def table(spark, tmp_path):
    """A Delta table with a comment and a property, as SDP creates a dataset; dropped afterwards."""
    name = f"catalog_{tmp_path.name.replace('-', '_')}"[:60]
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING DELTA COMMENT 'raw rows' "
              f"TBLPROPERTIES ('quality' = 'bronze', 'delta.enableChangeDataFeed' = 'true')")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def session_catalog(spark):
    return spark._jsparkSession.sessionState().catalogManager().v2SessionCatalog()


def deltas_own_catalog(spark, jvm):
    """A plain `DeltaCatalog` over the same session catalog: what runs without lakewatch's jar."""
    catalog = jvm.org.apache.spark.sql.delta.catalog.DeltaCatalog()
    catalog.setDelegateCatalog(jvm.org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog(
        spark._jsparkSession.sessionState().catalog()))
    return catalog


def java_array(spark, cls, items):
    array = spark.sparkContext._gateway.new_array(cls, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def alter(spark, jvm, catalog, name: str, *changes) -> None:
    table_change = jvm.org.apache.spark.sql.connector.catalog.TableChange
    made = []
    for kind, *args in changes:
        if kind == "set":
            made.append(table_change.setProperty(*args))
        else:  # ("add", column, type): a column change
            made.append(table_change.addColumn(java_array(spark, jvm.java.lang.String, [args[0]]),
                                               getattr(jvm.org.apache.spark.sql.types.DataTypes, args[1])))
    namespace = java_array(spark, jvm.java.lang.String, [spark.catalog.currentDatabase()])
    catalog.alterTable(jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, name),
                       java_array(spark, table_change, made))


def versions(spark, name: str) -> list[tuple[int, str]]:
    return [(r["version"], r["operation"]) for r in
            spark.sql(f"DESCRIBE HISTORY {name}").orderBy("version").collect()]


def properties(spark, name: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


SDP_CALL = (("set", "quality", "bronze"), ("set", "delta.enableChangeDataFeed", "true"), ("set", "comment", "raw rows"))


def test_the_sessions_catalog_is_lakewatchs(spark, jvm):
    assert session_catalog(spark).getClass().getName() == delta_catalog.CATALOG_CLASS


def test_setting_the_values_a_table_has_makes_no_commit(spark, jvm, table):
    before = versions(spark, table)
    alter(spark, jvm, session_catalog(spark), table, *SDP_CALL)
    assert versions(spark, table) == before == [(0, "CREATE TABLE")]


def test_deltas_own_catalog_commits_the_same_call(spark, jvm, table):
    """What the test above guards against: Delta's catalog makes a version of nothing."""
    alter(spark, jvm, deltas_own_catalog(spark, jvm), table, *SDP_CALL)
    assert versions(spark, table) == [(0, "CREATE TABLE"), (1, "SET TBLPROPERTIES")]


def test_a_new_value_is_committed_with_the_unchanged_ones(spark, jvm, table):
    alter(spark, jvm, session_catalog(spark), table, ("set", "quality", "bronze"), ("set", "quality_owner", "ops"))
    assert versions(spark, table) == [(0, "CREATE TABLE"), (1, "SET TBLPROPERTIES")]
    assert properties(spark, table)["quality_owner"] == "ops"


def test_a_changed_value_and_a_changed_comment_are_committed(spark, jvm, table):
    alter(spark, jvm, session_catalog(spark), table, ("set", "quality", "silver"), ("set", "comment", "clean rows"))
    assert versions(spark, table)[-1] == (1, "SET TBLPROPERTIES")
    assert properties(spark, table)["quality"] == "silver"
    assert spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Comment'").collect()[0]["data_type"] == "clean rows"


def test_a_comment_on_a_table_without_one_is_committed(spark, jvm, tmp_path):
    """A table created without a comment has no `comment` among its properties: SDP's comment is new."""
    name = f"uncommented_{tmp_path.name.replace('-', '_')}"[:60]
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING DELTA")
    try:
        alter(spark, jvm, session_catalog(spark), name, ("set", "comment", "raw rows"))
        assert versions(spark, name)[-1] == (1, "SET TBLPROPERTIES")
        assert spark.sql(f"DESCRIBE TABLE EXTENDED {name}").where("col_name = 'Comment'").collect()[0]["data_type"] == "raw rows"
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_column_change_beside_unchanged_properties_is_committed(spark, jvm, table):
    alter(spark, jvm, session_catalog(spark), table, ("set", "quality", "bronze"), ("add", "amount", "DoubleType"))
    assert "ADD COLUMNS" in [operation for _, operation in versions(spark, table)[1:]]
    assert spark.table(table).columns == ["id", "amount"]


def test_a_users_class_path_and_jars_are_added_after_lakewatchs_not_instead():
    conf = {javalib.CLASS_PATH: "/cache/lakewatch-localfs.jar", javalib.JARS: "/ivy/delta.jar,/cache/lakewatch-catalog.jar",
            delta_catalog.SESSION_CATALOG: delta_catalog.CATALOG_CLASS}
    merged = javalib.with_class_path(conf, {javalib.CLASS_PATH: "/opt/jdbc.jar", javalib.JARS: "/opt/udf.jar",
                                            "spark.sql.shuffle.partitions": "4"})
    assert merged[javalib.CLASS_PATH].split(os.pathsep) == ["/cache/lakewatch-localfs.jar", "/opt/jdbc.jar"]
    assert merged[javalib.JARS].split(",") == ["/ivy/delta.jar", "/cache/lakewatch-catalog.jar", "/opt/udf.jar"]
    assert merged["spark.sql.shuffle.partitions"] == "4"
    assert merged[delta_catalog.SESSION_CATALOG] == delta_catalog.CATALOG_CLASS
    assert javalib.with_class_path({}, {javalib.CLASS_PATH: "/opt/jdbc.jar"})[javalib.CLASS_PATH] == "/opt/jdbc.jar"


def test_without_the_patch_deltas_own_catalog_is_named(monkeypatch):
    """The patch turned off (as when its jar is missing or stale): Delta's jars alone in spark.jars, and
    Delta's own catalog."""
    monkeypatch.setenv(patches.OFF_ENV, "unchanged_properties")
    conf = session.base_conf()
    assert conf[javalib.JARS].split(",") == list(map(str, jars.jar_paths()))
    assert conf[delta_catalog.SESSION_CATALOG] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
