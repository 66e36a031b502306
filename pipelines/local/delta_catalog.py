"""Delta's catalog for the local engine, without a commit for an ALTER TABLE that changes nothing.

Open-source Spark Declarative Pipelines sets each dataset's declared table properties and comment at
every update (`DatasetManager` calls the catalog's `alterTable` with all of them, changed or not), and
Delta commits every such call as a new table version (`SET TBLPROPERTIES` in DESCRIBE HISTORY). A new
version of a bronze table moves the offset of each stream reading it, so in an update with nothing new
each clean table and each quarantine flow still ran a micro-batch of no rows, which rebuilt the
target's transaction state, wrote an empty Parquet file the commit does not add, and committed; and a
materialized view got three commits per refresh instead of two (bench/RESULTS.md).

`pipelines/local/java/lakewatch/catalog/UnchangedPropertiesDeltaCatalog.java` extends Delta's
`DeltaCatalog`: when every change of an `alterTable` call sets a property to the value the table
already has, it returns the table without a commit; anything else goes to Delta unchanged. `make
setup` compiles it (`python -m pipelines.local.javalib`) into `.cache/java/lakewatch-catalog.jar`,
which every local JVM adds to `spark.jars` after Delta's jars (it must be loaded where Delta is) and
names in `spark.sql.catalog.spark_catalog`. Without the jar, Delta's own catalog runs, as before.

So on the local engine an `ALTER TABLE ... SET TBLPROPERTIES` that sets only values the table already
has leaves no version in its history; Databricks' pipelines are unaffected (`--remote` endpoints keep
their own catalog).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local import jars
from pipelines.local.javalib import JARS, JavaLibrary, pyspark_jars

PACKAGE = "lakewatch.catalog"
CATALOG_CLASS = f"{PACKAGE}.UnchangedPropertiesDeltaCatalog"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"  # Delta's own
SESSION_CATALOG = "spark.sql.catalog.spark_catalog"


def compile_class_path() -> list[Path]:
    """pyspark's jars (Spark's catalog API, Scala) and Delta's."""
    return [*pyspark_jars(), *jars.jar_paths()]


LIBRARY = JavaLibrary("lakewatch-catalog", PACKAGE, compile_class_path)


def spark_conf(delta_jars: list[Path], jar: Path | None = None) -> dict[str, str]:
    """`spark.jars` (Delta's jars, then lakewatch's catalog jar when it is current) and the session
    catalog: lakewatch's when the jar is current, else Delta's."""
    path = LIBRARY.current_jar(jar)
    if path is None:
        return {JARS: ",".join(map(str, delta_jars)), SESSION_CATALOG: DELTA_CATALOG}
    return {JARS: ",".join(map(str, [*delta_jars, path])), SESSION_CATALOG: CATALOG_CLASS}
