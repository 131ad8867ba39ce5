//! A small evaluator of integer IR expressions over one tensor's storage.
//!
//! It runs the level functions that the level formats emit, so reading storage back (and
//! the tests of each level) uses exactly the description the code generator inlines.

use super::{ArrayKind, BinOp, Expr, Intrinsic};
use crate::format::LevelStorage;

/// Storage and variable bindings an expression is evaluated against.
pub struct Env<'a> {
    /// The tensor's levels (level `k` is `levels[k - 1]`).
    pub levels: &'a [LevelStorage],
    /// Variable bindings.
    pub vars: &'a [(&'a str, i64)],
}

impl Env<'_> {
    fn array(&self, level: Option<usize>, kind: ArrayKind) -> &[i64] {
        let level = level.expect("level functions only read level arrays");
        self.levels[level - 1]
            .array(kind)
            .unwrap_or_else(|| panic!("level {level} has no {kind:?} array"))
    }

    /// Evaluate an integer (or boolean, as 0/1) expression.
    pub fn eval(&self, expr: &Expr) -> i64 {
        match expr {
            Expr::Int(v) => *v,
            Expr::Bool(b) => *b as i64,
            Expr::Float(_) => panic!("level functions are integer expressions"),
            Expr::Var(name) => self
                .vars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("unbound variable {name}")),
            Expr::Param(p) => self.levels[p.level - 1].param(p.kind),
            Expr::Load(array, index) => {
                let i = self.eval(index);
                self.array(array.level, array.kind)[i as usize]
            }
            Expr::Neg(a) => -self.eval(a),
            Expr::Not(a) => (self.eval(a) == 0) as i64,
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.eval(a), self.eval(b));
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div => a / b,
                    BinOp::Rem => a % b,
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
                }
            }
            Expr::Select(c, a, b) => {
                if self.eval(c) != 0 {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::Call(Intrinsic::HashLocate, array, args) => {
                let idx = self.array(array.level, array.kind);
                let (width, parent, coord) = (
                    self.eval(&args[0]),
                    self.eval(&args[1]),
                    self.eval(&args[2]),
                );
                hash_locate(idx, width, parent, coord)
            }
        }
    }
}

/// Linear probing inside the parent's block of `width` buckets; the same algorithm the C
/// prelude implements.
pub fn hash_locate(idx: &[i64], width: i64, parent: i64, coord: i64) -> i64 {
    let base = parent * width;
    let start = base + coord.rem_euclid(width);
    let mut p = start;
    while idx[p as usize] != coord && idx[p as usize] != -1 {
        p = base + (p - base + 1) % width;
        if p == start {
            break;
        }
    }
    p
}
