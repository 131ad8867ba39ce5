//! Schedules: any text parses or gives an error; what parses is applied to one of a few
//! fixed statements (the first byte chooses), and what applies is lowered, each step either
//! succeeding or giving an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::lower::lower;
use sparsec::notation::{self, TensorDecl};
use sparsec::schedule::{Concrete, Schedule};

/// A tensor's name, format and order.
type Declared = (&'static str, &'static str, usize);

/// Statements with the formats of all their tensors: SpMV, SpGEMM, MTTKRP, a sparse sum
/// into a scalar, and a blocked format beside a sparse vector.
const STATEMENTS: [(&str, &[Declared]); 5] = [
    (
        "y(i) = A(i,j) * x(j)",
        &[("y", "dense", 1), ("A", "csr", 2), ("x", "dense", 1)],
    ),
    (
        "C(i,k) = A(i,j) * B(j,k)",
        &[("C", "csr", 2), ("A", "csr", 2), ("B", "csr", 2)],
    ),
    (
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[
            ("A", "dense", 2),
            ("B", "sss", 3),
            ("C", "dense", 2),
            ("D", "dense", 2),
        ],
    ),
    (
        "a = B(i,j) + C(i,j)",
        &[("a", "dense", 0), ("B", "dcsr", 2), ("C", "coo", 2)],
    ),
    (
        "y(i) = A(i,j) * x(j) + z(i)",
        &[
            ("y", "dense", 1),
            ("A", "bcsr:2x2", 2),
            ("x", "dense", 1),
            ("z", "sv", 1),
        ],
    ),
];

fuzz_target!(|data: &[u8]| {
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let Ok(schedule) = Schedule::parse(text) else {
        return;
    };
    let (statement, formats) = STATEMENTS[usize::from(choice) % STATEMENTS.len()];
    let assignment = notation::parse(statement).expect("fixed statement parses");
    let decls: Vec<TensorDecl> = formats
        .iter()
        .map(|&(name, spelling, order)| {
            let format = Format::parse(spelling, order).expect("fixed format parses");
            TensorDecl::new(name).with_format(format)
        })
        .collect();
    let sizes: Vec<(String, usize)> = ["i", "j", "k", "l"]
        .iter()
        .map(|v| (v.to_string(), 4))
        .collect();
    let statement = notation::bind(&assignment, &decls, &sizes).expect("fixed statement binds");
    let concrete = Concrete::new(&statement).expect("fixed statement has a default schedule");
    if let Ok(scheduled) = schedule.apply(&concrete) {
        let _ = lower(&scheduled);
    }
});
