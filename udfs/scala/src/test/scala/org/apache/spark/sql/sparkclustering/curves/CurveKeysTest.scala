package org.apache.spark.sql.sparkclustering
package curves

import scala.util.Random

import org.junit.Assert._
import org.junit.Test

/** zorder / hilbert keys (CurveKeys): known keys of the Python reference
 *  (udfs/python/spark_clustering_udfs/reference.py), and the curves' defining properties on full grids. */
class CurveKeysTest {

  private def hex(bytes: Array[Byte]): String = bytes.map(b => f"${b & 0xff}%02x").mkString

  /** The key of either kind as an unsigned integer. */
  private def hilbert(ids: Seq[Long], bits: Int): BigInt = {
    val n = ids.length
    if (CurveKeys.usesLongKey(n, bits)) BigInt(CurveKeys.hilbertLong(ids.toArray, n, bits))
    else BigInt(1, CurveKeys.hilbertBytes(ids.toArray, n, bits))
  }
  private def zorder(ids: Seq[Long], bits: Int): BigInt = {
    val n = ids.length
    if (CurveKeys.usesLongKey(n, bits)) BigInt(CurveKeys.zorderLong(ids.toArray, n, bits))
    else BigInt(1, CurveKeys.zorderBytes(ids.toArray, n, bits))
  }

  /** The spec of zorder_key written out one bit at a time: bit L of ids(i) is bit L*n + (n-1-i). */
  private def interleaved(ids: Seq[Long], bits: Int): BigInt = {
    val n = ids.length
    (0 until bits).foldLeft(BigInt(0)) { (key, level) =>
      ids.indices.foldLeft(key)((k, i) => if (((ids(i) >>> level) & 1) != 0) k.setBit(level * n + (n - 1 - i)) else k)
    }
  }

  // (ids, bits, hilbert_key, zorder_key) from reference.hilbert_key / zorder_key; BINARY keys in hex
  private val ReferenceKeys: Seq[(Seq[Long], Int, String, String)] = Seq(
    (Seq(0L, 2L), 2, "4", "4"),
    (Seq(3L, 0L), 2, "15", "10"),
    (Seq(10L, 1L, 1L), 4, "3852", "2083"),
    (Seq(8L, 4L, 14L), 4, "3244", "2760"),
    (Seq(92L, 448L, 585L, 760L), 10, "202105961381", "224933820418"),
    (Seq(819L, 62L, 509L, 282L), 10, "1036522773046", "597586573018"),
    (Seq(6272L, 27737L, 24645L, 21400L), 15, "382432133446109516", "534173610630533638"),
    (Seq(23485L, 17588L, 26120L, 3429L), 15, "855625718600485324", "1020232070957149449"),
    (Seq(1773195636L, 885873799L), 31, "3709030239036473135", "3283927122742241845"),
    (Seq(281590890L, 1095302696L), 31, "1225482856343441958", "1297512510096944328"),
    (Seq(2608L, 1111L, 3994L, 1820L, 2672L), 12, "926851671059741657", "773183321427618184"),
    (Seq(2090L, 3581L, 4011L, 4095L, 3105L), 12, "768010146166672234", "1134008198411266767"),
    (Seq(275L, 22L, 152L, 11L, 204L, 86L, 310L), 9, "9122298640657529030", "4695029065101997512"),
    (Seq(64L, 54L, 383L, 59L, 447L, 335L, 75L), 9, "2012910984602135845", "1587885984264855455"),
    (Seq(3988576L, 1618348L, 3577089L), 22, "03118e65b2827f4b53", "02fd48f17943530481"),
    (Seq(2498351L, 4040007L, 1328788L), 22, "0246fdadff70a796e2", "0335e24549ee2a19f6"),
    (Seq(133L, 225L, 174L, 53L, 52L, 208L, 252L, 233L), 8, "ba9a62d49d85b160", "e7477b1e23ba20d1"),
    (Seq(46L, 36L, 118L, 124L, 208L, 173L, 4L, 91L), 8, "08ec5b1274643942", "0c39f43995f6a105"),
    (Seq(1597692109L, 1546353352L, 440869356L, 499507868L, 747891358L, 1128635162L), 31,
      "021fead766dbc3181240581d694707d1899e1e7bc70804a3", "0310bcfb6a6518dc22c0de9f9f67b1cc05c9fb8207fee0e0"),
    (Seq(1841124479L, 348929646L, 1099438963L, 1546264509L, 576908616L, 1957625489L), 31,
      "03606d92cde4730f25c559d1aad74396d2b7b84292fb96d6", "02d8d59350a8e529e0f711e00e34fd7f774e17af2ddb4e2d"))

  @Test def keysOfThePythonReference(): Unit = ReferenceKeys.foreach { case (ids, bits, h, z) =>
    val n = ids.length
    val what = s"${ids.mkString(",")} at $bits bits"
    if (CurveKeys.usesLongKey(n, bits)) {
      assertEquals(s"hilbert $what", h.toLong, CurveKeys.hilbertLong(ids.toArray, n, bits))
      assertEquals(s"zorder $what", z.toLong, CurveKeys.zorderLong(ids.toArray, n, bits))
    } else {
      assertEquals(s"hilbert $what", h, hex(CurveKeys.hilbertBytes(ids.toArray, n, bits)))
      assertEquals(s"zorder $what", z, hex(CurveKeys.zorderBytes(ids.toArray, n, bits)))
    }
  }

  @Test def twoByTwoWalk(): Unit = {
    // the 2x2 Hilbert walk with id_1 as the first axis: (0,0) (0,1) (1,1) (1,0); Z-order is 2a + b
    val walk = Seq(Seq(0L, 0L) -> 0, Seq(0L, 1L) -> 1, Seq(1L, 1L) -> 2, Seq(1L, 0L) -> 3)
    walk.foreach { case (ids, key) => assertEquals(ids.toString, BigInt(key), hilbert(ids, 1)) }
    walk.foreach { case (ids, _) => assertEquals(ids.toString, BigInt(2 * ids(0) + ids(1)), zorder(ids, 1)) }
  }

  @Test def hilbertIsABijectiveUnitStepWalkAndZOrderInterleavesOnFullGrids(): Unit = {
    val grids = (1 to 5).map(2 -> _) ++ (1 to 3).map(3 -> _) ++ Seq(4, 5, 6).flatMap(n => Seq(n -> 1, n -> 2))
    grids.foreach { case (n, bits) =>
      val cells = (0L until (1L << (n * bits))).map(c => Seq.tabulate(n)(i => (c >>> (i * bits)) & ((1L << bits) - 1)))
      val byKey = cells.map(c => hilbert(c, bits) -> c).sortBy(_._1)
      assertEquals(s"n=$n bits=$bits: not a bijection", cells.indices.map(BigInt(_)), byKey.map(_._1))
      assertEquals(Seq.fill(n)(0L), byKey.head._2)
      byKey.sliding(2).foreach { case Seq((_, a), (_, b)) =>
        assertEquals(s"n=$n bits=$bits: $a -> $b", 1L, a.zip(b).map { case (x, y) => math.abs(x - y) }.sum)
      }
      cells.foreach(c => assertEquals(interleaved(c, bits), zorder(c, bits)))
    }
  }

  @Test def tablePathEqualsSkillingsTransform(): Unit = {
    // n <= 4 reads a state table; the transpose loop is Skilling's algorithm as published
    val rng = new Random(7)
    for (n <- 2 to 4; bits <- Seq(1, 3, 7, 10, 15, 63 / n min 31); _ <- 0 until 200) {
      val ids = Array.fill(n)(rng.nextLong() >>> (64 - bits))
      val viaTable = CurveKeys.hilbertLong(ids.clone(), n, bits)
      val x = ids.clone()
      CurveKeys.axesToTranspose(x, n, bits)
      assertEquals(s"${ids.mkString(",")} at $bits bits", CurveKeys.interleaveLong(x, n, bits), viaTable)
    }
  }

  @Test def binaryKeysAreBigEndianAndOrderAsUnsignedBytes(): Unit = {
    val rng = new Random(11)
    val (n, bits) = (3, 22)
    assertEquals(9, CurveKeys.keyBytes(n, bits))
    val keys = Seq.fill(500)(Seq.fill(n)(rng.nextInt(1 << bits).toLong)).map { ids =>
      val bytes = CurveKeys.zorderBytes(ids.toArray, n, bits)
      assertEquals(interleaved(ids, bits), BigInt(1, bytes))
      bytes
    }
    // Spark orders BINARY by unsigned bytes: that order is the keys' numeric order
    val unsigned = Ordering.fromLessThan[Array[Byte]] { (a, b) =>
      val k = a.indices.find(j => a(j) != b(j))
      k.exists(j => (a(j) & 0xff) < (b(j) & 0xff))
    }
    assertEquals(keys.map(BigInt(1, _)).sorted, keys.sorted(unsigned).map(BigInt(1, _)))
  }

  @Test def bigintOrBinaryAtThe63BitBoundary(): Unit = {
    assertTrue(CurveKeys.usesLongKey(7, 9))
    assertFalse(CurveKeys.usesLongKey(8, 8))
    assertTrue(CurveKeys.usesLongKey(3, 21))
    assertFalse(CurveKeys.usesLongKey(3, 22))
    assertEquals(124, CurveKeys.keyBytes(32, 31)) // 992 bits
    // the largest BIGINT key is 63 one bits: positive
    assertEquals(Long.MaxValue, CurveKeys.zorderLong(Array.fill(7)(511L), 7, 9))
    assertTrue(CurveKeys.hilbertLong(Array.fill(7)(511L), 7, 9) >= 0)
    // one id: the key is the id
    assertEquals(1234567L, CurveKeys.hilbertLong(Array(1234567L), 1, 31))
    assertEquals(1234567L, CurveKeys.zorderLong(Array(1234567L), 1, 31))
  }

  @Test def idsOutsideTheRangeOfBitsFail(): Unit = {
    CurveKeys.checkRange("zorder_key", Array(0L, 15L), 2, 4, 2)
    def message(ids: Array[Long]): String =
      try { CurveKeys.checkRange("hilbert_key", ids, ids.length, 4, 2); "" } catch { case e: RuntimeException => e.getMessage }
    assertTrue(message(Array(3L, 16L)).contains("hilbert_key: argument 3 = 16 is outside [0, 15] for bits = 4"))
    assertTrue(message(Array(-1L, 0L)).contains("argument 2 = -1 is outside [0, 15]"))
  }
}
