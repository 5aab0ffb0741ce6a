package org.apache.spark.sql.sparkclustering
package commit

import org.apache.spark.SparkContext
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, ImplicitCastInputTypes,
  Nondeterministic}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral, TrueLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{AbstractDataType, BooleanType, DataType, LongType}
import org.apache.spark.util.AccumulatorV2

/**
 * The checksum of row_checksum.sql (rows, the sum of `cast(hash(columns) as bigint)`, the xor of
 * `xxhash64(columns)`) of the rows one write reads, taken by that write itself, so that a recluster
 * does not read the files it rewrites once more only for it (the sample then reads only the
 * clustering columns).
 *
 * `observe_row_checksum(token, cast(hash(...) as bigint), xxhash64(...))` is a filter that keeps every
 * row and adds it to the accumulator registered under `token`; `observed_row_checksum(token)` reads
 * the total once the write ran (and forgets the token). An accumulator counts a successful task's
 * rows once; a task that ran twice (a stage retried after a lost shuffle, speculation) can count its
 * rows twice, which the check sees as a mismatch: a wrong count costs a failed recluster, never data.
 * The macro uses it only where the rows are read once (file routing: no range partitioner's sampling
 * job over the source).
 */
private[sparkclustering] final class RowChecksumAccumulator
    extends AccumulatorV2[RowChecksum, RowChecksum] {
  private var rows = 0L
  private var hashSum = 0L
  private var hashXor = 0L

  override def isZero: Boolean = rows == 0L && hashSum == 0L && hashXor == 0L
  override def copy(): RowChecksumAccumulator = {
    val c = new RowChecksumAccumulator
    c.rows = rows
    c.hashSum = hashSum
    c.hashXor = hashXor
    c
  }
  override def reset(): Unit = { rows = 0L; hashSum = 0L; hashXor = 0L }
  def addRow(hash: Long, xxhash: Long): Unit = { rows += 1; hashSum += hash; hashXor ^= xxhash }
  override def add(v: RowChecksum): Unit = { rows += v.rows; hashSum += v.hashSum; hashXor ^= v.hashXor }
  override def merge(other: AccumulatorV2[RowChecksum, RowChecksum]): Unit = add(other.value)
  override def value: RowChecksum = RowChecksum(rows, hashSum, hashXor)
}

private[sparkclustering] case class RowChecksum(rows: Long, hashSum: Long, hashXor: Long)

/** The driver's accumulators by token: created when a query naming the token is analyzed (every
 *  analysis of it finds the same one), taken once by observed_row_checksum. A run that fails before
 *  taking its total leaves an entry; the oldest go beyond MaxTokens. */
private[sparkclustering] object ObservedRowChecksums {
  val MaxTokens = 256

  private val byToken = new java.util.LinkedHashMap[String, RowChecksumAccumulator]() {
    override def removeEldestEntry(e: java.util.Map.Entry[String, RowChecksumAccumulator]): Boolean =
      size() > MaxTokens
  }

  def accumulator(token: String): RowChecksumAccumulator = byToken.synchronized {
    Option(byToken.get(token)).getOrElse {
      val sc = SparkContext.getActive.getOrElse(throw new IllegalStateException(
        "spark_clustering: observe_row_checksum needs an active SparkContext"))
      val acc = new RowChecksumAccumulator
      sc.register(acc, s"spark_clustering row checksum $token")
      byToken.put(token, acc)
      acc
    }
  }

  /** The rows observed under `token`, and the token forgotten; None if no query named it. */
  def take(token: String): Option[RowChecksum] = byToken.synchronized(Option(byToken.remove(token)).map(_.value))
}

/** observe_row_checksum(token, hash, xxhash): true for every row, which it adds to the token's
 *  accumulator. Nondeterministic, so the optimizer neither drops nor moves it, nor pushes it into
 *  a scan as a data filter (where data skipping would look at it). Generated code of its own: a
 *  CodegenFallback expression would take the write's scan and filter out of whole-stage codegen. */
private[sparkclustering] case class ObserveRowChecksum(token: String, hash: Expression, xxhash: Expression,
    accumulator: RowChecksumAccumulator)
    extends Expression with Nondeterministic with ImplicitCastInputTypes {

  override def children: Seq[Expression] = Seq(hash, xxhash)
  override def inputTypes: Seq[AbstractDataType] = Seq(LongType, LongType)
  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  override def prettyName: String = "observe_row_checksum"
  override def toString: String = s"$prettyName($token, $hash, $xxhash)"
  override def sql: String = s"$prettyName('$token', ${hash.sql}, ${xxhash.sql})"

  override protected def initializeInternal(partitionIndex: Int): Unit = ()

  override protected def evalInternal(input: InternalRow): Any = {
    val h = hash.eval(input)
    val x = xxhash.eval(input)
    accumulator.addRow(if (h == null) 0L else h.asInstanceOf[Long], if (x == null) 0L else x.asInstanceOf[Long])
    true
  }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    // the accumulator travels with the task's generated code (its references) and reports to the driver
    val acc = ctx.addReferenceObj("rowChecksum", accumulator, classOf[RowChecksumAccumulator].getName)
    val h = hash.genCode(ctx)
    val x = xxhash.genCode(ctx)
    ev.copy(code = code"""
      |${h.code}
      |${x.code}
      |$acc.addRow(${h.isNull} ? 0L : ${h.value}, ${x.isNull} ? 0L : ${x.value});
      |""".stripMargin, isNull = FalseLiteral, value = TrueLiteral)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(hash = newChildren(0), xxhash = newChildren(1))
}

/** `select * from observed_row_checksum(token)`: one row (row_count, hash_sum, hash_xor) of the rows
 *  the write naming `token` read; an error when no query named it. */
private[sparkclustering] case class ObservedRowChecksumRows(token: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("row_count", LongType, nullable = false)(),
    AttributeReference("hash_sum", LongType, nullable = false)(),
    AttributeReference("hash_xor", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = ObservedRowChecksums.take(token) match {
    case Some(c) => Seq(Row(c.rows, c.hashSum, c.hashXor))
    case None => throw SparkClusteringErrors.invalidArgument("observed_row_checksum",
      s"no query observed rows under the token '$token' in this driver (or its total was taken already)")
  }
}
