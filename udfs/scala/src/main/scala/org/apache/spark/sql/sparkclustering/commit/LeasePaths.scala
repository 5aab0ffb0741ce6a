package org.apache.spark.sql.sparkclustering
package commit

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/** Where a table's writer leases live (TableLease): one per name, one per location. */
private[commit] object LeasePaths {

  /** The lease of a table name: `<database location>/_sc_leases/<table>`. It survives the renames
   *  of clustered_table's swap (which move a managed table's directory). */
  def ofName(spark: SparkSession, tableName: String): Path = {
    val session = Sessions.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    val catalog = session.sessionState.catalog
    val db = ident.database.getOrElse(catalog.getCurrentDatabase)
    new Path(new Path(catalog.getDatabaseMetadata(db).locationUri), s"_sc_leases/${ident.table.toLowerCase}")
  }

  /** The lease of a table's location: `<location>/_sc_lease`, shared by every catalog whose table
   *  points there. */
  def ofLocation(t: CatalogTable): Path = new Path(CatalogTables.location(t), "_sc_lease")
}
