package org.apache.spark.sql.sparkclustering

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.SparkSession

/** The session as the jar uses it: Spark's classic session (where the session state and the
 *  catalog live, on every line: SparkLine) and a Hadoop configuration with the session's
 *  `spark.hadoop.*` settings. */
private[sparkclustering] object Sessions {
  def classic(spark: SparkSession): SparkLine.ClassicSession = SparkLine.classic(spark)

  def hadoopConf(spark: SparkSession): Configuration = classic(spark).sessionState.newHadoopConf()
}
