//! The host part of an outlined function, run by an evaluator of the IR: the scalars
//! around the launches (a dot product's sum, host loops that launch a kernel per
//! iteration) and the few stores after them. What it reads and writes of the arrays it
//! asks a [`Memory`] for, which knows where each array is current (host or device) and
//! copies only when it must.

use crate::ir::{
    interp, ArrayRef, BinOp, Element, Expr, Function, IndexWidth, LocalType, Loop, LoopKind,
    ParamRef, ScalarArg, Signature, Stmt, Type, ValueType, Var,
};

/// A scalar as the host holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The value as C converts it to `double`.
    pub fn float(self) -> f64 {
        match self {
            Scalar::Int(v) => v as f64,
            Scalar::Float(v) => v,
        }
    }

    /// The value as an index; a floating-point value is an error.
    pub fn int(self) -> Result<i64, String> {
        match self {
            Scalar::Int(v) => Ok(v),
            Scalar::Float(v) => Err(format!("the value {v} is used as an index")),
        }
    }

    /// `self` stored in a variable or array element of type `ty` (C's conversion).
    pub fn to_type(self, ty: Type) -> Scalar {
        match ty {
            Type::Value(ValueType::F64) => Scalar::Float(self.float()),
            Type::Value(ValueType::F32) => Scalar::Float(self.float() as f32 as f64),
            Type::Bool => Scalar::Int(i64::from(
                self != Scalar::Int(0) && self != Scalar::Float(0.0),
            )),
            Type::Index => match self {
                Scalar::Int(v) => Scalar::Int(v),
                Scalar::Float(v) => Scalar::Int(v as i64),
            },
        }
    }
}

/// How an array's elements are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    F64,
    F32,
    I64,
    I32,
    I8,
}

impl Stored {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Stored::F64 | Stored::I64 => 8,
            Stored::F32 | Stored::I32 => 4,
            Stored::I8 => 1,
        }
    }

    /// How a variable of type `ty` is stored (a truth value as C's `int`).
    pub fn of_type(ty: Type) -> Stored {
        match ty {
            Type::Value(ValueType::F64) => Stored::F64,
            Type::Value(ValueType::F32) => Stored::F32,
            Type::Index => Stored::I64,
            Type::Bool => Stored::I32,
        }
    }

    /// The element in `bytes` (exactly [`Stored::size`] of them).
    pub fn read(self, bytes: &[u8]) -> Scalar {
        let wrong = "as many bytes as the element's size";
        match self {
            Stored::F64 => Scalar::Float(f64::from_ne_bytes(bytes.try_into().expect(wrong))),
            Stored::F32 => Scalar::Float(f32::from_ne_bytes(bytes.try_into().expect(wrong)).into()),
            Stored::I64 => Scalar::Int(i64::from_ne_bytes(bytes.try_into().expect(wrong))),
            Stored::I32 => Scalar::Int(i32::from_ne_bytes(bytes.try_into().expect(wrong)).into()),
            Stored::I8 => Scalar::Int(i8::from_ne_bytes(bytes.try_into().expect(wrong)).into()),
        }
    }

    /// Write `value` into `bytes` (exactly [`Stored::size`] of them), converted as C
    /// stores it; a floating-point value stored as an index is an error.
    pub fn write(self, value: Scalar, bytes: &mut [u8]) -> Result<(), String> {
        match self {
            Stored::F64 => bytes.copy_from_slice(&value.float().to_ne_bytes()),
            Stored::F32 => bytes.copy_from_slice(&(value.float() as f32).to_ne_bytes()),
            Stored::I64 => bytes.copy_from_slice(&value.int()?.to_ne_bytes()),
            Stored::I32 => bytes.copy_from_slice(&(value.int()? as i32).to_ne_bytes()),
            Stored::I8 => bytes.copy_from_slice(&(value.int()? as i8).to_ne_bytes()),
        }
        Ok(())
    }

    /// How `array` of `function` (laid out as `signature`) stores its elements.
    pub fn of(function: &Function, signature: &Signature, array: &ArrayRef) -> Stored {
        match array {
            ArrayRef::Scratch(s) => match function.scratch_info(*s).ty {
                LocalType::Value => Stored::F64,
                LocalType::Index => Stored::I64,
                LocalType::Flag => Stored::I8,
            },
            _ => {
                let slot = signature.arrays.iter().position(|b| b == array);
                match slot.map(|s| signature.elements[s]) {
                    Some(Element::Value(ValueType::F32)) => Stored::F32,
                    Some(Element::Index(IndexWidth::I32)) => Stored::I32,
                    Some(Element::Index(IndexWidth::I64)) => Stored::I64,
                    _ => Stored::F64,
                }
            }
        }
    }
}

/// The arrays of a call as the host part sees them, and the launches.
pub trait Memory {
    /// Array `array`'s host storage, current (copied back from a device that wrote it);
    /// `write` when the host is about to write it, so that a device copy is stale.
    fn host(&mut self, array: &ArrayRef, write: bool) -> Result<&mut [u8], String>;

    /// Run kernel `kernel`; `vars` holds the host's variables (by [`Var`] index), which
    /// the kernel reads and sums into.
    fn launch(&mut self, kernel: usize, vars: &mut [Option<Scalar>]) -> Result<(), String>;

    /// Append an entry of the output (the host part's [`Stmt::Emit`]).
    fn emit(&mut self, coords: &[i64], value: f64) -> Result<(), String>;
}

/// The evaluator of a host part.
pub struct Host<'a> {
    pub function: &'a Function,
    pub signature: &'a Signature,
    pub params: &'a [i64],
    pub vars: Vec<Option<Scalar>>,
}

impl<'a> Host<'a> {
    /// An evaluator of `function` (a host part) with the call's scalars `params`.
    pub fn new(function: &'a Function, signature: &'a Signature, params: &'a [i64]) -> Host<'a> {
        Host {
            function,
            signature,
            params,
            vars: vec![None; function.vars.len()],
        }
    }

    /// Run the statements.
    pub fn run(&mut self, stmts: &[Stmt], memory: &mut dyn Memory) -> Result<(), String> {
        for s in stmts {
            self.stmt(s, memory)?;
        }
        Ok(())
    }

    fn set(&mut self, v: Var, value: Scalar) {
        self.vars[v.index()] = Some(value.to_type(self.function.var(v).ty));
    }

    fn stmt(&mut self, s: &Stmt, memory: &mut dyn Memory) -> Result<(), String> {
        match s {
            Stmt::Decl(v, e) | Stmt::Assign(v, e) => {
                let value = self.eval(e, memory)?;
                self.set(*v, value);
            }
            Stmt::Store(store) => {
                let index = self.eval(&store.index, memory)?.int()?;
                let mut value = self.eval(&store.value, memory)?;
                if store.accumulate {
                    let old = self.load(&store.array, index, memory)?;
                    value = arith(BinOp::Add, old, value)?;
                }
                self.store(&store.array, index, value, memory)?;
            }
            Stmt::For(l) => self.for_loop(l, memory)?,
            Stmt::Atomic(inner) => self.stmt(inner, memory)?,
            Stmt::While(c, body) => {
                while self.eval(c, memory)?.float() != 0.0 {
                    self.run(body, memory)?;
                }
            }
            Stmt::If(c, then, otherwise) => {
                if self.eval(c, memory)?.float() != 0.0 {
                    self.run(then, memory)?;
                } else {
                    self.run(otherwise, memory)?;
                }
            }
            Stmt::Block(b) => self.run(b, memory)?,
            Stmt::Launch(n) => memory.launch(*n, &mut self.vars)?,
            Stmt::Prefetch { .. } => {}
            Stmt::Emit { coords, value } => {
                let coords = coords
                    .iter()
                    .map(|c| self.eval(c, memory)?.int())
                    .collect::<Result<Vec<i64>, String>>()?;
                let value = self.eval(value, memory)?.float();
                memory.emit(&coords, value)?;
            }
            Stmt::OrderTouched { .. } | Stmt::Barrier => {
                return Err(format!("the host part cannot run {s:?}"))
            }
        }
        Ok(())
    }

    fn for_loop(&mut self, l: &Loop, memory: &mut dyn Memory) -> Result<(), String> {
        if let LoopKind::Parallel { unit, .. } = l.kind {
            return Err(format!(
                "the host part has a loop on {unit:?}, which it runs none of"
            ));
        }
        let start = self.eval(&l.start, memory)?.int()?;
        let mut i = start;
        while i < self.eval(&l.end, memory)?.int()? {
            self.set(l.var, Scalar::Int(i));
            self.run(&l.body, memory)?;
            i += 1;
        }
        Ok(())
    }

    /// The value of parameter `p` in this call.
    pub fn param(&self, p: ParamRef) -> Option<i64> {
        let slot = self
            .signature
            .scalars
            .iter()
            .position(|s| *s == ScalarArg::Param(p))?;
        self.params.get(slot).copied()
    }

    /// `acc ⊕ term` for the function's reduction: its [`crate::ir::ReductionOperator`]
    /// evaluated with `acc` and `term` bound, else a sum. How the host combines the copies
    /// of a reduction that the groups of a launch left.
    pub fn reduce(
        &mut self,
        acc: Scalar,
        term: Scalar,
        memory: &mut dyn Memory,
    ) -> Result<Scalar, String> {
        let Some(op) = &self.function.reduction_operator else {
            return arith(BinOp::Add, acc, term);
        };
        self.set(op.acc, acc);
        self.set(op.term, term);
        self.eval(&op.combined, memory)
    }

    /// Evaluate `e`.
    pub fn eval(&self, e: &Expr, memory: &mut dyn Memory) -> Result<Scalar, String> {
        Ok(match e {
            Expr::Int(v) => Scalar::Int(*v),
            Expr::Float(v) => Scalar::Float(*v),
            Expr::Bool(b) => Scalar::Int(i64::from(*b)),
            Expr::Var(v) => self.vars[v.index()].ok_or_else(|| {
                format!(
                    "variable `{}` is read before it is set",
                    self.function.var(*v).hint
                )
            })?,
            Expr::Param(p) => Scalar::Int(
                self.param(*p)
                    .ok_or_else(|| format!("the call passes no parameter {p:?}"))?,
            ),
            Expr::Symbol(s) => return Err(format!("unresolved symbol {s:?}")),
            Expr::Load(a, i) => {
                let index = self.eval(i, memory)?.int()?;
                self.load(a, index, memory)?
            }
            Expr::Neg(a) => match self.eval(a, memory)? {
                Scalar::Int(v) => Scalar::Int(v.checked_neg().ok_or("an index overflows")?),
                Scalar::Float(v) => Scalar::Float(-v),
            },
            Expr::Not(a) => Scalar::Int(i64::from(self.eval(a, memory)?.float() == 0.0)),
            Expr::Bin(op, a, b) => {
                let a = self.eval(a, memory)?;
                // C's `&&` and `||` do not evaluate their right side when the left decides.
                match (op, a) {
                    (BinOp::And, Scalar::Int(0)) => return Ok(Scalar::Int(0)),
                    (BinOp::Or, Scalar::Int(v)) if v != 0 => return Ok(Scalar::Int(1)),
                    _ => {}
                }
                arith(*op, a, self.eval(b, memory)?)?
            }
            Expr::Select(c, a, b) => {
                if self.eval(c, memory)?.float() != 0.0 {
                    self.eval(a, memory)?
                } else {
                    self.eval(b, memory)?
                }
            }
            Expr::Math(f, args) => {
                let args = args
                    .iter()
                    .map(|a| Ok(self.eval(a, memory)?.float()))
                    .collect::<Result<Vec<f64>, String>>()?;
                Scalar::Float(f.eval(&args))
            }
            Expr::Call(helper, array, args) => {
                let args = args
                    .iter()
                    .map(|a| self.eval(a, memory)?.int())
                    .collect::<Result<Vec<i64>, String>>()?;
                if Stored::of(self.function, self.signature, array) != Stored::I64 {
                    return Err(format!("helper `{}` reads 64-bit indices", helper.name));
                }
                let words: Vec<i64> = memory
                    .host(array, false)?
                    .chunks_exact(8)
                    .map(|w| i64::from_ne_bytes(w.try_into().expect("8 bytes")))
                    .collect();
                Scalar::Int((helper.eval)(&words, &args))
            }
        })
    }

    fn element(
        &self,
        array: &ArrayRef,
        index: i64,
        write: bool,
        memory: &'_ mut dyn Memory,
    ) -> Result<(Stored, usize), String> {
        let stored = Stored::of(self.function, self.signature, array);
        let len = memory.host(array, write)?.len() / stored.size();
        match usize::try_from(index) {
            Ok(i) if i < len => Ok((stored, i * stored.size())),
            _ => Err(format!(
                "the host part reads element {index} of an array of {len} ({array:?})"
            )),
        }
    }

    fn load(
        &self,
        array: &ArrayRef,
        index: i64,
        memory: &mut dyn Memory,
    ) -> Result<Scalar, String> {
        let (stored, at) = self.element(array, index, false, memory)?;
        Ok(stored.read(&memory.host(array, false)?[at..at + stored.size()]))
    }

    fn store(
        &self,
        array: &ArrayRef,
        index: i64,
        value: Scalar,
        memory: &mut dyn Memory,
    ) -> Result<(), String> {
        let (stored, at) = self.element(array, index, true, memory)?;
        stored.write(
            value,
            &mut memory.host(array, true)?[at..at + stored.size()],
        )
    }
}

/// `a op b` as C computes it: on `int64_t` where both are integers, else on `double`.
pub fn arith(op: BinOp, a: Scalar, b: Scalar) -> Result<Scalar, String> {
    if let (Scalar::Int(a), Scalar::Int(b)) = (a, b) {
        return interp::apply(op, a, b)
            .map(Scalar::Int)
            .ok_or_else(|| format!("`{a} {op:?} {b}` overflows or divides by zero"));
    }
    let (a, b) = (a.float(), b.float());
    let truth = |t: bool| Scalar::Int(i64::from(t));
    Ok(match op {
        BinOp::Add => Scalar::Float(a + b),
        BinOp::Sub => Scalar::Float(a - b),
        BinOp::Mul => Scalar::Float(a * b),
        BinOp::Div => Scalar::Float(a / b),
        BinOp::Rem => Scalar::Float(a % b),
        BinOp::Min => Scalar::Float(if a < b { a } else { b }),
        BinOp::Max => Scalar::Float(if a > b { a } else { b }),
        BinOp::Lt => truth(a < b),
        BinOp::Le => truth(a <= b),
        BinOp::Gt => truth(a > b),
        BinOp::Ge => truth(a >= b),
        BinOp::Eq => truth(a == b),
        BinOp::Ne => truth(a != b),
        BinOp::And => truth(a != 0.0 && b != 0.0),
        BinOp::Or => truth(a != 0.0 || b != 0.0),
    })
}
