package org.apache.spark.sql.sparkclustering
package layout

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.{BooleanType, LongType, StructField}

/** The workload boxes of the layout functions (kdtree_fit, simulate_layouts), as
 *  macros/layouts/_kdtree_layout.sql's _layout_boxes_sql writes them. */
private[layout] object WorkloadBoxes {

  /** The boxes of `boxesSql` ('' for none) over the k clustering columns `fields`: 1 + 3k columns,
   *  the box's count, then per column whether it filters on it and its bounds (the column's type;
   *  NULL = open), collected to the driver; an error naming `function` otherwise. */
  def collect(spark: SparkSession, function: String, boxesSql: String, fields: Seq[StructField]): Seq[KdTreeFit.Box] =
    if (boxesSql.trim.isEmpty) Seq.empty else {
      val k = fields.length
      val plan = spark.sql(boxesSql).queryExecution
      val boxFields = plan.analyzed.schema.fields
      if (boxFields.length != 1 + 3 * k || boxFields.head.dataType != LongType || (0 until k).exists(c =>
          boxFields(1 + 3 * c).dataType != BooleanType || boxFields(2 + 3 * c).dataType != fields(c).dataType ||
          boxFields(3 + 3 * c).dataType != fields(c).dataType)) {
        throw SparkClusteringErrors.invalidArgument(function, s"boxes_sql must give 1 + 3 x $k columns: count, then per " +
          s"column filters (BOOLEAN), lo and hi (the column's type); got ${boxFields.map(_.dataType.simpleString).mkString(", ")}")
      }
      plan.executedPlan.executeCollect().toSeq.map { r =>
        new KdTreeFit.Box(r.getLong(0),
          Array.tabulate(k)(c => r.getBoolean(1 + 3 * c)),
          Array.tabulate(k)(c => r.get(2 + 3 * c, fields(c).dataType)),
          Array.tabulate(k)(c => r.get(3 + 3 * c, fields(c).dataType)))
      }
    }
}
