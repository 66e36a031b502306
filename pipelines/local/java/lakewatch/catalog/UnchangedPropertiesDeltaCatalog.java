package lakewatch.catalog;

import java.util.Map;
import java.util.Objects;

import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.delta.catalog.DeltaCatalog;

/**
 * {@code spark.sql.catalog.spark_catalog}: Delta's catalog, except that an ALTER TABLE whose every
 * change sets a table property to the value it already has makes no Delta commit.
 *
 * <p>Open-source Spark Declarative Pipelines sets every dataset's declared properties and comment at
 * every update ({@code DatasetManager} calls {@code alterTable} with them whether or not they
 * changed). Delta commits each such call as a new table version, and a new version of a streaming
 * table moves the offset of every stream that reads it: each clean table and each quarantine flow then
 * runs a micro-batch of no rows in an update with nothing new. Any other change, or a property set
 * to a new value, goes to Delta's catalog unchanged, all changes together.
 */
public class UnchangedPropertiesDeltaCatalog extends DeltaCatalog {
  // Delta declares this method with an array, Spark's TableCatalog with varargs (one signature).
  @Override
  @SuppressWarnings("overrides")
  public Table alterTable(Identifier ident, TableChange... changes) {
    if (changes.length > 0) {
      Table current = loadTable(ident);
      if (onlySetsCurrentValues(current.properties(), changes)) {
        return current;
      }
    }
    return super.alterTable(ident, changes);
  }

  /** True when every change is a property set to the value {@code properties} already holds. */
  static boolean onlySetsCurrentValues(Map<String, String> properties, TableChange[] changes) {
    for (TableChange change : changes) {
      if (!(change instanceof TableChange.SetProperty)) {
        return false;
      }
      TableChange.SetProperty set = (TableChange.SetProperty) change;
      if (!properties.containsKey(set.property())
          || !Objects.equals(properties.get(set.property()), set.value())) {
        return false;
      }
    }
    return true;
  }
}
