package org.apache.spark.sql.sparkclustering
package workload

import org.apache.spark.sql.delta.SnapshotDescriptor
import org.apache.spark.sql.execution.datasources.FileIndex

/** A Delta scan's table configuration, from the snapshot its file index was planned at (no I/O):
 *  Delta keeps table properties in its log, not in the catalog entry (ScannedTables). */
private[workload] object DeltaScanProperties extends (FileIndex => Map[String, String]) {
  override def apply(index: FileIndex): Map[String, String] = index match {
    case d: SnapshotDescriptor => d.metadata.configuration
    case _ => Map.empty
  }
}
