package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.SparkSession

/**
 * The project's one fault-injection hook: named steps of a commit, a swap, a lease acquisition or
 * a recovery at which a test holds or breaks the writer (docs/concurrency.md, "Test hooks"). Inert
 * unless the session conf spark.sparkclustering.test.pauseAt (SparkClusteringConf.TestPauseAt)
 * names the step:
 *  - `<step>`: print where we are and sleep, to be killed (`kill -9`) at that step;
 *  - `<step>:fail`: throw "injected failure at <step>" (what the macros' test hook 'fail' raises);
 *  - `<step>:wait`: set spark.sparkclustering.test.reached=<step> and wait (at most 10 minutes)
 *    until a test sets spark.sparkclustering.test.release=<step>, so it can run a concurrent
 *    writer at that step.
 * Without a session (the unit suites replay journals without one) there is no hook.
 */
private[sparkclustering] object TestPausePoints {

  def at(spark: SparkSession, step: String): Unit =
    Option(spark).fold("")(s => SparkClusteringConf.TestPauseAt.get(s)) match {
      case `step` =>
        System.out.println(s"spark_clustering: paused at $step")
        System.out.flush()
        Thread.sleep(600000L)
        throw new IllegalStateException(s"spark_clustering: still alive 10 minutes after pausing at $step")
      case held if held == s"$step:fail" =>
        throw new IllegalStateException(s"spark_clustering: injected failure at $step (test hook)")
      case held if held == s"$step:wait" =>
        spark.conf.set(SparkClusteringConf.TestReached.key, step)
        val deadline = System.currentTimeMillis() + 600000L
        while (SparkClusteringConf.TestRelease.get(spark) != step) {
          if (System.currentTimeMillis() > deadline) {
            throw new IllegalStateException(s"spark_clustering: nobody released $step within 10 minutes")
          }
          Thread.sleep(20L)
        }
      case _ =>
    }
}
