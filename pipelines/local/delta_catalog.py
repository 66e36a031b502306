"""Delta's catalog for the local engine, without a commit for an ALTER TABLE that changes nothing (the
`unchanged_properties` patch).

Open-source Spark Declarative Pipelines sets each dataset's declared table properties and comment at
every update (`DatasetManager` calls the catalog's `alterTable` with all of them, changed or not), and
Delta commits every such call as a new table version (`SET TBLPROPERTIES` in DESCRIBE HISTORY). A new
version of a bronze table moves the offset of each stream reading it, so in an update with nothing new
each clean table and each quarantine flow would run a micro-batch of no rows, which rebuilds the
target's transaction state, writes an empty Parquet file the commit does not add, and commits; and a
materialized view would get an extra commit per refresh.

`pipelines/local/java/lakewatch/catalog/UnchangedPropertiesDeltaCatalog.java` extends Delta's
`DeltaCatalog`: when every change of an `alterTable` call sets a property to the value the table
already has, it returns the table without a commit; anything else goes to Delta unchanged. Setup
compiles it into `.cache/java/lakewatch-catalog.jar`, which a local JVM adds to `spark.jars` after
Delta's jars (it must be loaded where Delta is) and names in `spark.sql.catalog.spark_catalog`.
Without it, Delta's own catalog runs (session.DELTA_CONF names it).

So on the local engine an `ALTER TABLE ... SET TBLPROPERTIES` that sets only values the table already
has leaves no version in its history; Databricks' pipelines are unaffected (`--remote` endpoints keep
their own catalog).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.local import jars
from pipelines.local.javalib import JARS, JavaLibrary, package_sources, pyspark_jars

PACKAGE = "lakewatch.catalog"
CATALOG_CLASS = f"{PACKAGE}.UnchangedPropertiesDeltaCatalog"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"  # Delta's own
SESSION_CATALOG = "spark.sql.catalog.spark_catalog"


def compile_class_path() -> list[Path]:
    """pyspark's jars (Spark's catalog API, Scala) and Delta's."""
    return [*pyspark_jars(), *jars.jar_paths()]


LIBRARY = JavaLibrary("lakewatch-catalog", package_sources(PACKAGE), compile_class_path)


def spark_conf(jar: Path) -> dict[str, str]:
    """`spark.jars` with `jar` (to follow Delta's jars there) and the session catalog named after its class."""
    return {JARS: str(jar), SESSION_CATALOG: CATALOG_CLASS}
