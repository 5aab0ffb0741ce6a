package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.errors.QueryCompilationErrors

/**
 * Runtime errors. Generated (Janino) code calls these through the static forwarders of this object,
 * so every message is built in one place for the codegen and the interpreted paths.
 *
 * USER_RAISED_EXCEPTION is the class raise_error() uses, so the SQL fallback macros (which fail with
 * raise_error) and the native functions surface the same kind of error with the same text.
 */
object SparkClusteringErrors {

  private def runtime(message: String): RuntimeException = SparkLine.userError(message)

  /**
   * Spark's own WRONG_NUM_ARGS AnalysisException; `expected` carries the call shape. (An error class
   * is required: PySpark renders every SparkThrowable through its error class.)
   */
  def wrongNumArgs(function: String, expected: String, actual: Int): Throwable =
    QueryCompilationErrors.wrongNumArgsError(function, Seq(expected), actual)

  def rangeIdNullBoundaries(): RuntimeException = runtime(
    "range_id: the boundaries array is NULL; pass a non-NULL ARRAY of sorted boundaries " +
      "(an empty array() puts every non-NULL value in range 1)")

  def rangeIdNullBoundary(index: Int): RuntimeException = runtime(
    s"range_id: boundaries[$index] (0-based) is NULL; boundaries must not contain NULLs " +
      "(drop NULLs when computing the boundaries, NULL values get range 0 anyway)")

  /** `argument` counts from 1 over all arguments, so bits is argument 1 and id_1 is argument 2. */
  def idOutOfRange(function: String, argument: Int, value: Long, bits: Int): RuntimeException = runtime(
    s"$function: argument $argument = $value is outside [0, ${(1L << bits) - 1}] for bits = $bits " +
      "(ids must be range_id results and bits must cover the number of ranges)")

  /** A bad argument of a recluster table function (they run on the driver, not in codegen). */
  def invalidArgument(function: String, message: String): RuntimeException = runtime(s"$function: $message")

  /** Another writer holds the table's lease and the wait ran out. */
  def leaseBusy(what: String, holder: String, waitedSeconds: Double, ttlSeconds: Long): RuntimeException = runtime(
    f"spark_clustering: $what is being written by $holder; waited $waitedSeconds%.1f s. Run again when it has " +
      "finished, or wait longer (config cluster_lease_wait_seconds, or var spark_clustering_lease_wait_seconds). " +
      s"If that run is gone (its process killed), its lease expires by itself within $ttlSeconds s of its last " +
      "renewal (spark.sparkclustering.lease.ttlSeconds); a dead process on the same host frees it at once.")

  /** The writer no longer holds its lease at a commit point: it stops without committing. */
  def leaseLost(what: String, why: String): RuntimeException = runtime(
    s"spark_clustering: $what: lost the table's lease before committing ($why); nothing was committed " +
      "and the table is unchanged. Run again.")

  /** The writer lost its lease after publishing its commit journal: it stops without applying the
   *  journal, which the lease's new holder rolls forward (its recovery), so nothing is lost. */
  def leaseLostAfterJournal(what: String, why: String, journal: String): RuntimeException = runtime(
    s"spark_clustering: $what: lost the table's lease after publishing its commit journal ($why); this run " +
      s"stops without applying it. The run that holds the lease now finishes that commit (its recovery rolls " +
      s"the journal in $journal forward; the next recluster() or clustered_table run of the table does it " +
      "otherwise), so no row is lost or doubled. Run again.")

  /** An object store whose create-if-absent is not atomic: the lease would not be exclusive there. */
  def noConditionalCreate(file: String, why: String): RuntimeException = runtime(
    s"spark_clustering: the table lease $file needs a create-if-absent that exactly one writer wins; on S3A " +
      s"that is a conditional PUT (If-None-Match: *), and $why. Set spark.hadoop.fs.s3a.create.conditional.enabled=true " +
      "(Hadoop 3.4.2 or later; per bucket: fs.s3a.bucket.<bucket>.create.conditional.enabled) on a store that " +
      "supports conditional writes (AWS S3 does). Nothing was written: without it two writers could both " +
      "hold the lease (docs/object_stores.md).")
}
