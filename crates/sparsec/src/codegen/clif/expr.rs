//! Expressions, typed as C types them: integers are `int64_t`, truth values `int` (kept as
//! bytes holding 0 or 1), values `double` or `float`; mixed arithmetic promotes like C's
//! usual arithmetic conversions and assignments convert implicitly.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};

use super::runtime;
use super::translate::{error, Translator};
use crate::codegen::abi::BackendError;
use crate::ir::{BinOp, Expr, MathFn, Type as IrType, ValueType};

/// The C type of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A truth value, 0 or 1.
    Bool,
    /// `int64_t`.
    Int,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Kind {
    /// The kind of a declared IR type.
    pub(super) fn of(ty: IrType) -> Kind {
        match ty {
            IrType::Index => Kind::Int,
            IrType::Bool => Kind::Bool,
            IrType::Value(ValueType::F64) => Kind::F64,
            IrType::Value(ValueType::F32) => Kind::F32,
        }
    }

    /// Its machine type.
    pub(super) fn clif(self) -> Type {
        match self {
            Kind::Bool => types::I8,
            Kind::Int => types::I64,
            Kind::F32 => types::F32,
            Kind::F64 => types::F64,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Kind::F32 | Kind::F64)
    }

    /// The IR type of this kind.
    fn ty(self) -> IrType {
        match self {
            Kind::Bool => IrType::Bool,
            Kind::Int => IrType::Index,
            Kind::F32 => IrType::Value(ValueType::F32),
            Kind::F64 => IrType::Value(ValueType::F64),
        }
    }

    /// The type both operands of a binary operation convert to.
    fn promote(a: Kind, b: Kind) -> Kind {
        Kind::of(IrType::promote(a.ty(), b.ty()))
    }
}

/// True when evaluating `e` could fault (a load, a call, an integer division): C only
/// evaluates such an operand of `&&`, `||` and `?:` when the condition selects it, and
/// lowering relies on that to guard loads past a segment's end.
fn may_fault(e: &Expr) -> bool {
    match e {
        Expr::Load(..) | Expr::Call(..) | Expr::Bin(BinOp::Div | BinOp::Rem, ..) => true,
        Expr::Int(_)
        | Expr::Float(_)
        | Expr::Bool(_)
        | Expr::Var(_)
        | Expr::Param(_)
        | Expr::Symbol(_) => false,
        Expr::Neg(a) | Expr::Not(a) => may_fault(a),
        Expr::Math(_, args) => args.iter().any(may_fault),
        Expr::Bin(_, a, b) => may_fault(a) || may_fault(b),
        Expr::Select(c, a, b) => may_fault(c) || may_fault(a) || may_fault(b),
    }
}

impl<'a> Translator<'a, '_> {
    /// Evaluate `e` and convert it to `kind`.
    pub(super) fn expr_as(&mut self, e: &'a Expr, kind: Kind) -> Result<Value, BackendError> {
        let (v, k) = self.expr(e)?;
        Ok(self.convert(v, k, kind))
    }

    /// Evaluate an integer expression (index, position, length).
    pub(super) fn int(&mut self, e: &'a Expr) -> Result<Value, BackendError> {
        self.expr_as(e, Kind::Int)
    }

    /// Evaluate a condition to a truth value.
    pub(super) fn cond(&mut self, e: &'a Expr) -> Result<Value, BackendError> {
        self.expr_as(e, Kind::Bool)
    }

    /// Zero-extend a byte element and sign-extend an `int32_t` index to an integer; other
    /// elements are as loaded.
    pub(super) fn widen(&mut self, v: Value, ty: Type) -> Value {
        if ty == types::I8 {
            self.b.ins().uextend(types::I64, v)
        } else if ty == types::I32 {
            self.b.ins().sextend(types::I64, v)
        } else {
            v
        }
    }

    /// C's implicit conversion of `v` from `from` to `to`.
    pub(super) fn convert(&mut self, v: Value, from: Kind, to: Kind) -> Value {
        let ins = self.b.ins();
        match (from, to) {
            _ if from == to => v,
            (Kind::Bool, Kind::Int) => ins.uextend(types::I64, v),
            (Kind::Bool, _) => {
                let v = ins.uextend(types::I64, v);
                self.convert(v, Kind::Int, to)
            }
            (Kind::Int, Kind::Bool) => ins.icmp_imm_s(IntCC::NotEqual, v, 0),
            (Kind::Int, f) => ins.fcvt_from_sint(f.clif(), v),
            (f, Kind::Bool) => {
                let zero = if f == Kind::F32 {
                    ins.f32const(0.0)
                } else {
                    ins.f64const(0.0)
                };
                self.b.ins().fcmp(FloatCC::NotEqual, v, zero)
            }
            // Saturating where C leaves out-of-range values undefined.
            (_, Kind::Int) => ins.fcvt_to_sint_sat(types::I64, v),
            (Kind::F32, Kind::F64) => ins.fpromote(types::F64, v),
            (_, _) => ins.fdemote(types::F32, v),
        }
    }

    /// Evaluate `e`, with its C type.
    pub(super) fn expr(&mut self, e: &'a Expr) -> Result<(Value, Kind), BackendError> {
        Ok(match e {
            Expr::Int(v) => (self.b.ins().iconst(types::I64, *v), Kind::Int),
            Expr::Float(v) => (self.b.ins().f64const(*v), Kind::F64),
            Expr::Bool(v) => (self.b.ins().iconst(types::I8, i64::from(*v)), Kind::Bool),
            Expr::Var(name) => {
                let (var, kind) = self.var(*name)?;
                (self.b.use_var(var), kind)
            }
            Expr::Symbol(s) => {
                return Err(error(format!("lowering left the symbol {s:?} unresolved")))
            }
            Expr::Param(p) => (
                *self
                    .params
                    .get(p)
                    .expect("the layout collects every parameter read"),
                Kind::Int,
            ),
            Expr::Load(array, index) => {
                let (base, ty, kind) = self.array(array)?;
                let index = self.int(index)?;
                let at = self.element(base, ty, index);
                let v = self.b.ins().load(ty, MemFlagsData::trusted(), at, 0);
                (self.widen(v, ty), kind)
            }
            Expr::Neg(a) => {
                let (v, k) = self.expr(a)?;
                if k.is_float() {
                    (self.b.ins().fneg(v), k)
                } else {
                    let v = self.convert(v, k, Kind::Int);
                    (self.b.ins().ineg(v), Kind::Int)
                }
            }
            Expr::Not(a) => {
                let v = self.cond(a)?;
                (self.b.ins().bxor_imm_s(v, 1), Kind::Bool)
            }
            Expr::Bin(op @ (BinOp::And | BinOp::Or), a, b) => (self.logic(*op, a, b)?, Kind::Bool),
            Expr::Bin(op, a, b) => {
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.arith(*op, a, b)
            }
            Expr::Select(c, a, b) => self.select(c, a, b)?,
            Expr::Math(f, args) => {
                if args.len() != f.arity() {
                    return Err(error(format!(
                        "{} takes {} argument(s), not {}",
                        f.c_name(),
                        f.arity(),
                        args.len()
                    )));
                }
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(self.expr_as(a, Kind::F64)?);
                }
                let x = values[0];
                let compare = |f: MathFn| match f {
                    MathFn::Lt => Some(FloatCC::LessThan),
                    MathFn::Le => Some(FloatCC::LessThanOrEqual),
                    MathFn::Gt => Some(FloatCC::GreaterThan),
                    MathFn::Ge => Some(FloatCC::GreaterThanOrEqual),
                    MathFn::Eq => Some(FloatCC::Equal),
                    // Unordered or unequal: C's `!=`, true where either side is NaN.
                    MathFn::Ne => Some(FloatCC::NotEqual),
                    _ => None,
                };
                let v = match f {
                    _ if compare(*f).is_some() => {
                        let cc = compare(*f).expect("a comparison");
                        let holds = self.b.ins().fcmp(cc, x, values[1]);
                        let one = self.b.ins().f64const(1.0);
                        let zero = self.b.ins().f64const(0.0);
                        self.b.ins().select(holds, one, zero)
                    }
                    MathFn::Pattern => self.b.ins().f64const(1.0),
                    MathFn::Where => {
                        let zero = self.b.ins().f64const(0.0);
                        let holds = self.b.ins().fcmp(FloatCC::NotEqual, x, zero);
                        self.b.ins().select(holds, values[1], values[2])
                    }
                    MathFn::Sqrt => self.b.ins().sqrt(x),
                    MathFn::Abs => self.b.ins().fabs(x),
                    MathFn::Floor => self.b.ins().floor(x),
                    MathFn::Ceil => self.b.ins().ceil(x),
                    _ => {
                        let symbol = runtime::math_symbol(*f).expect("a libcall");
                        let func = self.imported(symbol.name)?;
                        let call = self.b.ins().call(func, &values);
                        self.b.inst_results(call)[0]
                    }
                };
                (v, Kind::F64)
            }
            Expr::Call(helper, array, args) => {
                let (base, ..) = self.array(array)?;
                let mut call_args = vec![base];
                for a in args {
                    call_args.push(self.int(a)?);
                }
                if call_args.len() != 4 {
                    return Err(error(format!(
                        "{} takes 3 arguments after its array, not {}",
                        helper.name,
                        args.len()
                    )));
                }
                let func = self.helper(helper)?;
                let call = self.b.ins().call(func, &call_args);
                (self.b.inst_results(call)[0], Kind::Int)
            }
        })
    }

    /// A binary operation other than `&&`/`||` on evaluated operands.
    pub(super) fn arith(
        &mut self,
        op: BinOp,
        (a, ka): (Value, Kind),
        (b, kb): (Value, Kind),
    ) -> (Value, Kind) {
        let kind = Kind::promote(ka, kb);
        let a = self.convert(a, ka, kind);
        let b = self.convert(b, kb, kind);
        let ins = self.b.ins();
        let compare = |int, float| (int, float);
        let (int_cc, float_cc) = match op {
            BinOp::Lt => compare(IntCC::SignedLessThan, FloatCC::LessThan),
            BinOp::Le => compare(IntCC::SignedLessThanOrEqual, FloatCC::LessThanOrEqual),
            BinOp::Gt => compare(IntCC::SignedGreaterThan, FloatCC::GreaterThan),
            BinOp::Ge => compare(IntCC::SignedGreaterThanOrEqual, FloatCC::GreaterThanOrEqual),
            BinOp::Eq => compare(IntCC::Equal, FloatCC::Equal),
            BinOp::Ne => compare(IntCC::NotEqual, FloatCC::NotEqual),
            _ => {
                let float = kind.is_float();
                let v = match op {
                    BinOp::Add if float => ins.fadd(a, b),
                    BinOp::Add => ins.iadd(a, b),
                    BinOp::Sub if float => ins.fsub(a, b),
                    BinOp::Sub => ins.isub(a, b),
                    BinOp::Mul if float => ins.fmul(a, b),
                    BinOp::Mul => ins.imul(a, b),
                    BinOp::Div if float => ins.fdiv(a, b),
                    BinOp::Div => ins.sdiv(a, b),
                    BinOp::Rem if float => {
                        // fmod: the remainder of the quotient truncated toward zero.
                        let q = ins.fdiv(a, b);
                        let q = self.b.ins().trunc(q);
                        let q = self.b.ins().fmul(q, b);
                        self.b.ins().fsub(a, q)
                    }
                    BinOp::Rem => ins.srem(a, b),
                    BinOp::Min | BinOp::Max if float => {
                        // `a < b ? a : b` (and `>`). The C helpers take integers only:
                        // lowering takes the min and max of indices alone.
                        let cc = if op == BinOp::Min {
                            FloatCC::LessThan
                        } else {
                            FloatCC::GreaterThan
                        };
                        let pick = ins.fcmp(cc, a, b);
                        self.b.ins().select(pick, a, b)
                    }
                    BinOp::Min => ins.smin(a, b),
                    BinOp::Max => ins.smax(a, b),
                    _ => unreachable!("comparisons and logic are handled apart"),
                };
                return (v, kind);
            }
        };
        let v = if kind.is_float() {
            ins.fcmp(float_cc, a, b)
        } else {
            ins.icmp(int_cc, a, b)
        };
        (v, Kind::Bool)
    }

    /// `a && b`, `a || b`: `b` is evaluated only when it decides, if it could fault.
    fn logic(&mut self, op: BinOp, a: &'a Expr, b: &'a Expr) -> Result<Value, BackendError> {
        let left = self.cond(a)?;
        if !may_fault(b) {
            let right = self.cond(b)?;
            return Ok(if op == BinOp::And {
                self.b.ins().band(left, right)
            } else {
                self.b.ins().bor(left, right)
            });
        }
        let result = self.b.declare_var(types::I8);
        self.b.def_var(result, left);
        let [decide, done] = [(); 2].map(|_| self.b.create_block());
        if op == BinOp::And {
            self.b.ins().brif(left, decide, &[], done, &[]);
        } else {
            self.b.ins().brif(left, done, &[], decide, &[]);
        }
        self.b.switch_to_block(decide);
        let right = self.cond(b)?;
        self.b.def_var(result, right);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(self.b.use_var(result))
    }

    /// `c ? a : b`: only the chosen side is evaluated, if either could fault; each side is
    /// converted to the common type where it is evaluated.
    fn select(
        &mut self,
        c: &'a Expr,
        a: &'a Expr,
        b: &'a Expr,
    ) -> Result<(Value, Kind), BackendError> {
        let kind = Kind::of(IrType::common(
            self.function.type_of(a),
            self.function.type_of(b),
        ));
        let c = self.cond(c)?;
        if !may_fault(a) && !may_fault(b) {
            let a = self.expr_as(a, kind)?;
            let b = self.expr_as(b, kind)?;
            return Ok((self.b.ins().select(c, a, b), kind));
        }
        let result = self.b.declare_var(kind.clif());
        let [yes, no, done] = [(); 3].map(|_| self.b.create_block());
        self.b.ins().brif(c, yes, &[], no, &[]);
        for (block, side) in [(yes, a), (no, b)] {
            self.b.switch_to_block(block);
            let v = self.expr_as(side, kind)?;
            self.b.def_var(result, v);
            self.b.ins().jump(done, &[]);
        }
        self.b.switch_to_block(done);
        Ok((self.b.use_var(result), kind))
    }
}
