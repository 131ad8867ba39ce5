//! Lowering's names for the state it creates: an iterator's position is declared by one
//! method and read by others, so lowering refers to it by a key; each key is one IR
//! variable of the function under construction.

use std::collections::{HashMap, HashSet};

use super::Lowerer;
use crate::ir::{Expr, Function, LocalType, Scratch, Type, Var};

/// Variables and scratch arrays while lowering creates them. An iterator's state is
/// declared by one method and read by others (`q{stem}`, `{stem}_end`), so lowering
/// refers to it by a key that names the state; each key is one IR variable (also the hint
/// for its printed name), and the backend makes printed names unique.
pub(super) struct Tables {
    pub(super) function: Function,
    pub(super) vars: HashMap<String, Var>,
    /// Variables first met in an expression, typed `Index` until a declaration says more.
    pub(super) untyped: HashSet<Var>,
    pub(super) scratch: HashMap<String, Scratch>,
}

/// What lowering may name a variable by: its key, or the variable itself.
pub(super) trait VarKey {
    fn resolve(self, tables: &mut Tables, ty: Option<Type>) -> Var;
}

impl VarKey for Var {
    fn resolve(self, _: &mut Tables, _: Option<Type>) -> Var {
        self
    }
}

impl<S: AsRef<str>> VarKey for S {
    fn resolve(self, tables: &mut Tables, ty: Option<Type>) -> Var {
        let key = self.as_ref();
        match tables.vars.get(key) {
            Some(&v) => {
                if let Some(ty) = ty {
                    if tables.untyped.remove(&v) {
                        tables.function.vars[v.index()].ty = ty;
                    }
                }
                v
            }
            None => {
                let v = tables.function.fresh_var(key, ty.unwrap_or(Type::Index));
                if ty.is_none() {
                    tables.untyped.insert(v);
                }
                tables.vars.insert(key.to_string(), v);
                v
            }
        }
    }
}

impl Lowerer<'_> {
    /// The variable `key` names, declared with type `ty`.
    pub(super) fn named(&self, key: impl VarKey, ty: Type) -> Var {
        key.resolve(&mut self.tables.borrow_mut(), Some(ty))
    }

    /// The variable `key` names, whatever its type.
    pub(super) fn named_any(&self, key: impl VarKey) -> Var {
        key.resolve(&mut self.tables.borrow_mut(), None)
    }

    /// The value of the variable `key` names.
    pub(super) fn iv(&self, key: impl VarKey) -> Expr {
        Expr::Var(self.named_any(key))
    }

    /// The scratch array `key` names.
    pub(super) fn scratch(&self, key: &str, ty: LocalType) -> Scratch {
        let mut tables = self.tables.borrow_mut();
        if let Some(&s) = tables.scratch.get(key) {
            return s;
        }
        let s = tables.function.fresh_scratch(key, ty);
        tables.scratch.insert(key.to_string(), s);
        s
    }

    /// A key no other state has: `%` never starts a tensor or variable name.
    pub(super) fn fresh(&mut self, stem: &str) -> String {
        self.temps += 1;
        format!("%\u{1}{stem}{}", self.temps - 1)
    }

    /// A fresh scalar temporary, recorded with the parallel depth it is private to.
    pub(super) fn temp(&mut self) -> String {
        let name = self.fresh("t");
        self.temp_depth.insert(name.clone(), self.parallel.len());
        name
    }
}
