//! A small evaluator of integer IR expressions over one tensor's storage.
//!
//! The storage is seen through [`LevelArrays`], so the IR does not depend on how tensors
//! hold their arrays.
//!
//! It runs the level functions that the level formats emit, so reading storage back (and
//! the tests of each level) uses exactly the description the code generator inlines.

use std::borrow::Cow;

use super::{ArrayKind, ArrayRef, BinOp, Expr, ParamKind, ParamRef, Var};

/// The index arrays and level parameters of one tensor, as level functions read them.
pub trait LevelArrays {
    /// Array `kind` of 1-based level `level`, as `int64_t` (what helpers read).
    fn array(&self, level: usize, kind: ArrayKind) -> Cow<'_, [i64]>;
    /// Element `index` of array `kind` of 1-based level `level`, widened.
    fn load(&self, level: usize, kind: ArrayKind, index: usize) -> i64;
    /// Parameter `kind` of 1-based level `level`.
    fn param(&self, level: usize, kind: ParamKind) -> i64;
}

/// The storage an expression is evaluated against. Level functions evaluated here use no
/// variable but [`ARGUMENT`], so that one expression serves every position or coordinate
/// of a loop over storage.
pub struct Env<'a> {
    /// The tensor's levels.
    pub levels: &'a dyn LevelArrays,
    /// The value of [`ARGUMENT`].
    pub argument: i64,
}

/// The one variable an expression evaluated against storage may read: [`Env::argument`].
pub const ARGUMENT: Var = Var(u32::MAX);

impl Env<'_> {
    fn level_array(array: &ArrayRef) -> (usize, ArrayKind) {
        match *array {
            ArrayRef::Level { level, kind, .. } => (level, kind),
            _ => panic!("level functions only read level arrays"),
        }
    }

    /// Evaluate an integer (or boolean, as 0/1) expression.
    pub fn eval(&self, expr: &Expr) -> i64 {
        match expr {
            Expr::Int(v) => *v,
            Expr::Bool(b) => *b as i64,
            Expr::Float(_) => panic!("level functions are integer expressions"),
            Expr::Var(v) if *v == ARGUMENT => self.argument,
            Expr::Var(_)
            | Expr::Symbol(_)
            | Expr::Param(
                ParamRef::Extent(_)
                | ParamRef::Phase
                | ParamRef::Capacity
                | ParamRef::Length(_)
                | ParamRef::Scattered(_)
                | ParamRef::Uneven(_)
                | ParamRef::SumVersion
                | ParamRef::PrefetchDistance,
            ) => {
                panic!("level functions evaluated on storage take constants or ARGUMENT")
            }
            Expr::Param(ParamRef::Level { level, kind, .. }) => self.levels.param(*level, *kind),
            Expr::Load(array, index) => {
                let i = self.eval(index);
                let (level, kind) = Env::level_array(array);
                self.levels.load(level, kind, i as usize)
            }
            Expr::Math(..) => panic!("level functions are integer expressions"),
            Expr::Neg(a) => -self.eval(a),
            Expr::Not(a) => (self.eval(a) == 0) as i64,
            Expr::Bin(op, a, b) => apply(*op, self.eval(a), self.eval(b))
                .expect("level functions neither overflow nor divide by zero"),
            Expr::Select(c, a, b) => {
                if self.eval(c) != 0 {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::Call(helper, array, args) => {
                let args: Vec<i64> = args.iter().map(|a| self.eval(a)).collect();
                let (level, kind) = Env::level_array(array);
                (helper.eval)(&self.levels.array(level, kind), &args)
            }
        }
    }
}

/// `a op b` as C computes it on `int64_t`; `None` where C's result is undefined
/// (overflow, division by zero).
pub(crate) fn apply(op: BinOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => a.checked_add(b)?,
        BinOp::Sub => a.checked_sub(b)?,
        BinOp::Mul => a.checked_mul(b)?,
        BinOp::Div => a.checked_div(b)?,
        BinOp::Rem => a.checked_rem(b)?,
        BinOp::Min => a.min(b),
        BinOp::Max => a.max(b),
        BinOp::Lt => (a < b) as i64,
        BinOp::Le => (a <= b) as i64,
        BinOp::Gt => (a > b) as i64,
        BinOp::Ge => (a >= b) as i64,
        BinOp::Eq => (a == b) as i64,
        BinOp::Ne => (a != b) as i64,
        BinOp::And => (a != 0 && b != 0) as i64,
        BinOp::Or => (a != 0 || b != 0) as i64,
    })
}

/// The value of `expr` where it reads only constants and parameters (`param` gives each
/// parameter's value): what a launcher evaluates of a function's assumptions on the host.
/// `None` where `param` gives no value, `expr` reads anything else (a variable, an
/// array, a floating-point value), or C's result would be undefined.
pub fn scalar(expr: &Expr, param: &impl Fn(ParamRef) -> Option<i64>) -> Option<i64> {
    Some(match expr {
        Expr::Int(v) => *v,
        Expr::Bool(b) => *b as i64,
        Expr::Param(p) => param(*p)?,
        Expr::Neg(a) => scalar(a, param)?.checked_neg()?,
        Expr::Not(a) => (scalar(a, param)? == 0) as i64,
        Expr::Bin(op, a, b) => apply(*op, scalar(a, param)?, scalar(b, param)?)?,
        Expr::Select(c, a, b) => match scalar(c, param)? {
            0 => scalar(b, param)?,
            _ => scalar(a, param)?,
        },
        Expr::Float(_)
        | Expr::Var(_)
        | Expr::Symbol(_)
        | Expr::Load(..)
        | Expr::Call(..)
        | Expr::Math(..) => return None,
    })
}
