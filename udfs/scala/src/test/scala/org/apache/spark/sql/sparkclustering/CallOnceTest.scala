package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.Row
import org.junit.Assert._
import org.junit.Test

/** CallResults: a call id's first run answers its repeats; the latest 32 calls are kept. */
class CallOnceTest {

  @Test def aRepeatedCallGetsTheRowsOfItsFirstRunWithoutRunning(): Unit = {
    var runs = 0
    def call(): Seq[Row] = { runs += 1; Seq(Row(s"token-$runs")) }
    val first = CallResults.once("test-repeat")(call())
    val again = CallResults.once("test-repeat")(call())
    val third = CallResults.once("test-repeat")(call())
    assertEquals(1, runs)
    assertEquals(Seq(Row("token-1")), first)
    assertEquals(first, again)
    assertEquals(first, third)
    // another call id runs
    assertEquals(Seq(Row("token-2")), CallResults.once("test-repeat-other")(call()))
  }

  @Test def aCallThatFailsKeepsNothing(): Unit = {
    val failed = scala.util.Try(CallResults.once("test-failing")(throw new IllegalStateException("lease busy")))
    assertTrue(failed.isFailure)
    assertEquals(Seq(Row("ran")), CallResults.once("test-failing")(Seq(Row("ran"))))
  }

  @Test def theOldestOfMoreThan32CallsIsForgotten(): Unit = {
    CallResults.once("test-oldest")(Seq(Row("first")))
    (1 to 32).foreach(i => CallResults.once(s"test-later-$i")(Seq(Row(i))))
    assertEquals(Seq(Row("again")), CallResults.once("test-oldest")(Seq(Row("again"))))
    assertEquals(Seq(Row(32)), CallResults.once("test-later-32")(Seq(Row("not run"))))
  }
}
