package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.command.LeafRunnableCommand

/**
 * One call of a table function made with a call id (its last argument; the package's macros give
 * every call one): the first time the call is analysed it runs, and an analysis of the same call
 * again gets the rows of the first.
 *
 * Why: over Spark Connect a `select * from f(...)` is analysed, so run, once when the statement is
 * sent, again when the client asks for its schema and again when it fetches its rows, all from the
 * statement's text. A function that acts (table_lease_acquire, table_rewrite_commit, ...) would act
 * three times: the lease's second call waited for the lease its first call took. Elsewhere (the
 * embedded session, a Thrift server) a call runs once and its kept rows are never asked for.
 */
private[sparkclustering] case class CallOnce(callId: String, call: LeafRunnableCommand) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = call.output

  override def run(spark: SparkSession): Seq[Row] = CallResults.once(callId)(call.run(spark))
}

/** The rows of the latest calls made with a call id. A call's analyses follow each other within
 *  one client's statement, so the latest few dozen calls are all a session can ask for again. */
private[sparkclustering] object CallResults {
  private val Kept = 32

  private val latest = new java.util.LinkedHashMap[String, Seq[Row]]() {
    override def removeEldestEntry(eldest: java.util.Map.Entry[String, Seq[Row]]): Boolean = size() > Kept
  }

  def once(callId: String)(run: => Seq[Row]): Seq[Row] =
    latest.synchronized(Option(latest.get(callId))).getOrElse {
      // a call that fails keeps nothing: the statement fails and is not fetched
      val rows = run
      latest.synchronized(latest.put(callId, rows))
      rows
    }
}
