//! Index notation: any text parses or gives an error; what parses binds (every index
//! variable of size 3, every tensor's dimensions inferred) or gives an error, and what binds
//! becomes a scheduled statement or gives an error. Lines after the first declare formats,
//! `NAME:FORMAT`, so that formats and statements meet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::notation::ast::Expr;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::Concrete;

/// Every `(tensor, order)` and index variable of `e`.
fn collect(e: &Expr, tensors: &mut Vec<(String, usize)>, vars: &mut Vec<String>) {
    for a in e.accesses() {
        tensors.push((a.tensor.clone(), a.indices.len()));
        vars.extend(a.indices.iter().cloned());
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.lines();
    let Some(statement) = lines.next() else {
        return;
    };
    let Ok(assignment) = notation::parse(statement) else {
        return;
    };
    let mut tensors = vec![(assignment.lhs.tensor.clone(), assignment.lhs.indices.len())];
    let mut vars = assignment.lhs.indices.clone();
    collect(&assignment.rhs, &mut tensors, &mut vars);
    let mut decls: Vec<TensorDecl> = Vec::new();
    for (name, order) in &tensors {
        if decls.iter().any(|d| &d.name == name) {
            continue;
        }
        let mut decl = TensorDecl::new(name.clone());
        let spelled = lines
            .clone()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n == name);
        if let Some((_, spelling)) = spelled {
            match Format::parse(spelling, *order) {
                Ok(format) => decl = decl.with_format(format),
                Err(_) => return,
            }
        }
        decls.push(decl);
    }
    let sizes: Vec<(String, usize)> = vars.into_iter().map(|v| (v, 3)).collect();
    let Ok(statement) = notation::bind(&assignment, &decls, &sizes) else {
        return;
    };
    let _ = Concrete::new(&statement);
});
