"""orders_daily: a pipeline of the kind a team already runs, written with plain `pyspark.pipelines`
decorators and none of lakewatch's pattern, which lakewatch observes through its event log
(`observed_event_logs`): its updates, failures and expectations show in the observability tables
beside the ingest pipeline's.

It reads the clean `orders` table of the ingest pipeline (the demo's configuration has one), so an
update that runs before `orders` exists fails, as a downstream pipeline started too early does.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SOURCE = spark.conf.get("orders_daily.source_table")  # noqa: F821 (`spark` is provided by the pipeline runtime)


@dp.materialized_view(comment="Orders per day and currency: count and amount")
@dp.expect("known_currency", "currency IN ('EUR', 'USD', 'GBP')")
@dp.expect("non_negative_amount", "amount >= 0")
def orders_daily() -> DataFrame:
    return (
        spark.read.table(SOURCE)  # noqa: F821
        .groupBy(F.to_date("order_ts").alias("order_date"), "currency")
        .agg(F.count("*").alias("order_count"), F.sum("amount").alias("amount"))
    )
