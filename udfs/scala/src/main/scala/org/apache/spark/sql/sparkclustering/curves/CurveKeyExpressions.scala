package org.apache.spark.sql.sparkclustering
package curves

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult.TypeCheckFailure
import org.apache.spark.sql.catalyst.expressions.{Expression, ImplicitCastInputTypes}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.{AbstractDataType, BinaryType, DataType, IntegralType, LongType}

/**
 * zorder_key(bits, id_1, ..., id_n) and hilbert_key(bits, id_1, ..., id_n).
 *
 * BIGINT when n * bits <= 63, else BINARY of ceil(n * bits / 8) bytes (big-endian, zero-padded on
 * the left). Any NULL id gives NULL; ids outside [0, 2^bits) fail the query rather than produce
 * a key that silently collides with another cell.
 */
abstract class CurveKeyExpression extends Expression with ImplicitCastInputTypes with NullIntolerantExpression {

  protected def functionName: String

  /** Computes the key from the validated ids in x (which it may overwrite). */
  protected def longKey(x: Array[Long], n: Int, bits: Int): Long
  protected def bytesKey(x: Array[Long], n: Int, bits: Int): Array[Byte]
  /** Name of the CurveKeys method pair ("zorder" -> zorderLong / zorderBytes) used by codegen. */
  protected def codegenMethodPrefix: String

  final def bitsArgument: Expression = children.head
  final def ids: Seq[Expression] = children.tail
  final def numIds: Int = children.length - 1

  override def prettyName: String = functionName
  // Integral rather than INT for both so a BIGINT id is range-checked as is instead of being
  // truncated by an implicit cast to INT.
  override def inputTypes: Seq[AbstractDataType] = Seq.fill(children.length)(IntegralType)
  override def foldable: Boolean = children.forall(_.foldable)
  override def nullable: Boolean = ids.exists(_.nullable)

  /** bits as given, when it is a non-NULL constant. */
  @transient private lazy val constantBits: Option[Long] =
    if (bitsArgument.resolved && bitsArgument.foldable) {
      Option(bitsArgument.eval()).map(_.asInstanceOf[Number].longValue())
    } else {
      None
    }

  /** Falls back to 1 so dataType stays defined until checkInputDataTypes reports the problem. */
  final def bits: Int = constantBits match {
    case Some(b) if b >= 1 && b <= CurveKeys.MaxBits => b.toInt
    case _ => 1
  }

  override def dataType: DataType =
    if (CurveKeys.usesLongKey(numIds max 1, bits)) LongType else BinaryType

  override def checkInputDataTypes(): TypeCheckResult = {
    val usage = s"call $functionName(bits, id_1, ..., id_n), e.g. $functionName(10, id_a, id_b)"
    if (numIds < 1 || numIds > CurveKeys.MaxIds) {
      TypeCheckFailure(s"$functionName takes 1 to ${CurveKeys.MaxIds} id arguments after bits, " +
        s"but got $numIds; $usage")
    } else {
      val inputs = super.checkInputDataTypes()
      if (inputs.isFailure) {
        inputs
      } else if (!bitsArgument.foldable) {
        TypeCheckFailure(s"$functionName: bits (argument 1) must be a constant INT literal between 1 " +
          s"and ${CurveKeys.MaxBits}, but got the non-constant expression ${bitsArgument.sql}; " +
          s"pass the bits per id as a literal: $usage")
      } else {
        constantBits match {
          case Some(b) if b >= 1 && b <= CurveKeys.MaxBits => TypeCheckResult.TypeCheckSuccess
          case other =>
            TypeCheckFailure(s"$functionName: bits (argument 1) must be between 1 and " +
              s"${CurveKeys.MaxBits}, but got ${other.map(_.toString).getOrElse("NULL")}; use the " +
              "smallest bits with 2^bits > the largest range_id (number of boundaries + 1)")
        }
      }
    }
  }

  // Per-instance scratch: expressions are deserialized per task, so one thread uses it at a time.
  @transient private lazy val scratch: Array[Long] = new Array[Long](numIds)
  @transient private lazy val idExpressions: Array[Expression] = ids.toArray

  override def eval(input: InternalRow): Any = {
    val x = scratch
    val exprs = idExpressions
    val n = numIds
    var anyNull = false
    var i = 0
    while (i < n) {
      val v = exprs(i).eval(input)
      if (v == null) anyNull = true else x(i) = v.asInstanceOf[Number].longValue()
      i += 1
    }
    if (anyNull) {
      null
    } else {
      val b = bits
      CurveKeys.checkRange(functionName, x, n, b, 2)
      if (CurveKeys.usesLongKey(n, b)) longKey(x, n, b) else bytesKey(x, n, b)
    }
  }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val n = numIds
    val b = bits
    val curves = CurveKeys.getClass.getName.stripSuffix("$")
    val suffix = if (CurveKeys.usesLongKey(n, b)) "Long" else "Bytes"
    val javaType = CodeGenerator.javaType(dataType)
    // One long[] per generated object, filled per row: no allocation in the bigint case.
    val x = ctx.addMutableState("long[]", "curveKeyIds", v => s"$v = new long[$n];", forceInline = true)
    val anyNull = if (nullable) ctx.addMutableState(CodeGenerator.JAVA_BOOLEAN, "curveKeyAnyNull") else ""
    val assignments = ids.zipWithIndex.map { case (id, i) =>
      val g = id.genCode(ctx)
      if (id.nullable) {
        s"""${g.code}
           |if (${g.isNull}) { $anyNull = true; } else { $x[$i] = (long) ${g.value}; }""".stripMargin
      } else {
        s"""${g.code}
           |$x[$i] = (long) ${g.value};""".stripMargin
      }
    }
    val evalIds = ctx.splitExpressionsWithCurrentInputs(assignments, funcName = "curveKeyIds")
    val compute =
      s"""$curves.checkRange("$functionName", $x, $n, $b, 2);
         |${ev.value} = $curves.$codegenMethodPrefix$suffix($x, $n, $b);""".stripMargin
    if (nullable) {
      ev.copy(code = code"""
        |$anyNull = false;
        |$evalIds
        |boolean ${ev.isNull} = $anyNull;
        |$javaType ${ev.value} = ${CodeGenerator.defaultValue(dataType)};
        |if (!${ev.isNull}) {
        |  $compute
        |}""".stripMargin)
    } else {
      ev.copy(code = code"""
        |$evalIds
        |$javaType ${ev.value} = ${CodeGenerator.defaultValue(dataType)};
        |$compute""".stripMargin, isNull = FalseLiteral)
    }
  }
}

case class ZOrderKey(children: Seq[Expression]) extends CurveKeyExpression {
  override protected def functionName: String = "zorder_key"
  override protected def codegenMethodPrefix: String = "zorder"
  override protected def longKey(x: Array[Long], n: Int, bits: Int): Long = CurveKeys.zorderLong(x, n, bits)
  override protected def bytesKey(x: Array[Long], n: Int, bits: Int): Array[Byte] =
    CurveKeys.zorderBytes(x, n, bits)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): ZOrderKey =
    copy(children = newChildren)
}

case class HilbertKey(children: Seq[Expression]) extends CurveKeyExpression {
  override protected def functionName: String = "hilbert_key"
  override protected def codegenMethodPrefix: String = "hilbert"
  override protected def longKey(x: Array[Long], n: Int, bits: Int): Long = CurveKeys.hilbertLong(x, n, bits)
  override protected def bytesKey(x: Array[Long], n: Int, bits: Int): Array[Byte] =
    CurveKeys.hilbertBytes(x, n, bits)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): HilbertKey =
    copy(children = newChildren)
}
