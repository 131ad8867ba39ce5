//! `precompute` in every form TACO accepts (its `tests-workspaces.cpp` and the scheduling
//! paper's schedules), each against the reference evaluator on random and empty inputs, in
//! dense and sparse formats, with 1 and 2 threads; and each rule's boundary: the forms
//! just outside a rule are refused with the rule's name.

mod common;
use common::*;

use sparsec::tensor::Coo;

/// Input sets for `expr`'s operands: `dims` per tensor, each random (dense and sparse
/// densities) and empty.
fn sets(seed: u64, tensors: &[(&'static str, &[usize])]) -> Vec<Vec<(&'static str, Coo)>> {
    let mut r = rng(seed);
    [0.6, 0.15, 0.0]
        .iter()
        .map(|&density| {
            tensors
                .iter()
                .map(|&(name, dims)| (name, random_coo(&mut r, dims, density)))
                .collect()
        })
        .collect()
}

#[test]
fn sums_and_differences_are_staged_in_workspaces() {
    let inputs = sets(1, &[("B", &[7, 6]), ("C", &[7, 6]), ("D", &[7, 6])]);
    for f in ["dd", "ds", "ss"] {
        let formats = [("B", f), ("C", f), ("D", f)];
        // TACO's precompute2D_add, and the terms picked out of a longer sum in any order.
        for schedule in [
            "precompute(B(i,j)+C(i,j),{i,j},{i,j},ws)",
            "precompute(C(i,j)+B(i,j),(i,j),(i,j),ws)",
            "precompute(B(i,j)+C(i,j),j,j,ws)",
            "precompute(B(i,j)+D(i,j),j,jw)",
        ] {
            check_schedule(
                "A(i,j) = B(i,j) + C(i,j) + D(i,j)",
                &formats,
                &inputs,
                &[],
                schedule,
            );
        }
        // A difference and a function are whole subexpressions.
        check_schedule(
            "A(i,j) = abs(B(i,j)) * C(i,j) - D(i,j) + C(i,j)",
            &formats,
            &inputs,
            &[],
            "precompute(abs(B(i,j))*C(i,j)-D(i,j),(i,j),(i,j),ws)",
        );
        // A sum under a product, staged per row and read by the product's reduction.
        check_schedule(
            "A(i,k) = (B(i,j) + C(i,j)) * D(k,j)",
            &formats,
            &inputs,
            &[],
            "precompute(B(i,j)+C(i,j),j,j,ws)",
        );
    }
}

#[test]
fn products_with_literals_and_factors_in_any_order() {
    let inputs = sets(2, &[("B", &[7, 6]), ("c", &[6])]);
    for f in ["dd", "ds"] {
        for schedule in [
            "precompute(B(i,j)*1*c(j),{i,j},{i,j},ws)",
            "precompute(c(j)*B(i,j),j,j,ws)",
            "precompute(B(i,j)*2,j,j)",
        ] {
            check_schedule(
                "A(i,j) = B(i,j) * 1 * c(j) * 2",
                &[("B", f)],
                &inputs,
                &[],
                schedule,
            );
        }
    }
}

/// TACO's precompute4D_add, precompute4D_multireduce, precompute3D_TspV,
/// precompute3D_multipleWS and precompute3D_renamedIVars_TspV: workspaces of order 2 to 4,
/// a second precompute that reads the first workspace by name, renamed variables.
#[test]
fn chains_of_workspaces_of_any_order() {
    let inputs = sets(
        3,
        &[
            ("B", &[4, 3, 3, 2]),
            ("C", &[4, 3, 3, 2]),
            ("D", &[4, 3, 3, 2]),
        ],
    );
    for f in ["dddd", "ssss"] {
        check_schedule(
            "A(i,j,k,l) = B(i,j,k,l) + C(i,j,k,l) + D(i,j,k,l)",
            &[("B", f), ("C", f), ("D", f)],
            &inputs,
            &[],
            "precompute(B(i,j,k,l)+C(i,j,k,l),{i,j,k,l},{i,j,k,l},ws1),\
             precompute(ws1(i,j,k,l)+D(i,j,k,l),{i,j,k,l},{i,j,k,l},ws2)",
        );
    }
    let inputs = sets(
        4,
        &[("B", &[4, 3, 5, 2]), ("C", &[5, 2, 3]), ("D", &[3, 4])],
    );
    for f in ["dddd", "dsss", "ssss"] {
        check_schedule(
            "A(i,j) = B(i,j,k,l) * C(k,l,m) * D(m,n)",
            &[("B", f)],
            &inputs,
            &[],
            "precompute(B(i,j,k,l)*C(k,l,m),{i,j,m},{i,j,m},ws1),\
             precompute(ws1(i,j,m)*D(m,n),{i,j},{i,j},ws2)",
        );
    }
    let inputs = sets(5, &[("B", &[4, 3, 5, 5]), ("c", &[5])]);
    for (f, c) in [("dddd", "d"), ("dddd", "s"), ("ssss", "s")] {
        for schedule in [
            "precompute(B(i,j,k,l)*c(l),{i,j,k},{i,j,k},ws)",
            "precompute(B(i,j,k,l)*c(l),{i,j,k},{i,j,k},ws),\
             precompute(ws(i,j,k)*c(k),{i,j},{i,j},t)",
            "precompute(B(i,j,k,l)*c(l),{i,j,k},{iw,jw,kw},ws)",
        ] {
            check_schedule(
                "A(i,j) = B(i,j,k,l) * c(l) * c(k)",
                &[("B", f), ("c", c)],
                &inputs,
                &[],
                schedule,
            );
        }
    }
}

/// TACO's tile_vecElemMul tests: a workspace over a split loop's inner variable, with
/// and without a partial last tile.
#[test]
fn workspaces_over_tiles_with_partial_last_tiles() {
    for (n, factor) in [(16, 4), (16, 5), (17, 4), (3, 4)] {
        let inputs = sets(6 + n as u64, &[("B", &[n]), ("C", &[n])]);
        for f in ["d", "s"] {
            let formats = [("B", f), ("C", f)];
            check_schedule(
                "A(i) = B(i) * C(i)",
                &formats,
                &inputs,
                &[],
                &format!(
                    "bound(i,ib,{n},MaxExact),split(ib,i0,i1,{factor}),\
                     precompute(B(i)*C(i),i1,i1,precomputed)"
                ),
            );
            check_schedule(
                "A(i) = B(i) * C(i)",
                &formats,
                &inputs,
                &[],
                &format!("split(i,i0,i1,{factor}),precompute(B(i)*C(i),i1,i1,precomputed)"),
            );
        }
    }
    // A tile of a reduction: each tile's products are staged, then summed.
    let inputs = sets(7, &[("A", &[5, 11]), ("x", &[11])]);
    check_schedule(
        "y(i) = A(i,j) * x(j)",
        &[("A", "dd")],
        &inputs,
        &[],
        "split(j,j0,j1,4),precompute(A(i,j)*x(j),j1,j1,w),parallelize(i,CPUThread,NoRaces)",
    );
}

/// Where TACO places the workspace at the loop of its variable, which is inside the loops
/// of every other variable of the expression: the paper's MTTKRP schedule with
/// `precompute(B(i,k,l)*C(k,j), j, j)` stages products per `(i, k, l)`, and SpMV's
/// products may be staged in a workspace as large as the matrix.
#[test]
fn staging_workspaces_inside_the_other_variables_loops() {
    let inputs = sets(8, &[("B", &[9, 4, 5]), ("C", &[4, 6]), ("D", &[5, 6])]);
    for f in ["dss", "sss"] {
        for schedule in [
            "precompute(B(i,k,l)*C(k,j),j,j)",
            "split(i,i0,i1,4),precompute(B(i,k,l)*C(k,j),j,j),parallelize(i0,CPUThread,NoRaces)",
        ] {
            check_schedule(
                "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
                &[("B", f)],
                &inputs,
                &[],
                schedule,
            );
        }
    }
    let inputs = sets(9, &[("A", &[8, 7]), ("x", &[7])]);
    for schedule in [
        "precompute(A(i,j)*x(j),(i,j),(i,j),w)",
        "precompute(A(i,j)*x(j),i,iw)",
        "precompute(A(i,j)*x(j),j,jw)",
    ] {
        check_schedule(
            "y(i) = A(i,j) * x(j)",
            &[("A", "csr")],
            &inputs,
            &[],
            schedule,
        );
    }
}

#[test]
fn sparse_outputs_read_workspaces_that_are_factors() {
    let inputs = sets(10, &[("B", &[7, 6]), ("C", &[7, 6]), ("D", &[7, 6])]);
    for out in ["csr", "dcsr"] {
        check_schedule(
            "A(i,j) = B(i,j) * C(i,j) * D(i,j)",
            &[("B", "csr"), ("C", "csr"), ("D", "csr"), ("A", out)],
            &inputs,
            &[],
            "precompute(B(i,j)*C(i,j),j,j,ws)",
        );
    }
    let refused = schedule_error(
        "A(i,j) = B(i,j) + C(i,j) + D(i,j)",
        &[("B", "csr"), ("C", "csr"), ("D", "csr"), ("A", "csr")],
        &inputs[0],
        "precompute(B(i,j)+C(i,j),j,j,ws)",
    );
    assert!(
        refused.contains("a sparse output reads the workspace `ws` as a factor")
            && refused.contains("store the output densely"),
        "{refused}"
    );
}

/// Each rule's boundary: the form just past it is refused, naming the rule.
#[test]
fn each_rule_of_precompute_names_its_boundary() {
    let inputs = sets(11, &[("B", &[6, 6]), ("C", &[6, 6]), ("D", &[6, 6])]);
    let sum = "A(i,j) = B(i,j) + C(i,j) * D(i,j)";
    let refused = |expr: &str, schedule: &str| {
        let used: Vec<(&str, Coo)> = inputs[0]
            .iter()
            .filter(|(name, _)| expr.contains(&format!("{name}(")))
            .cloned()
            .collect();
        schedule_error(expr, &[("B", "ds"), ("C", "ds")], &used, schedule)
    };
    // Terms of different sums, or factors of different products, are no subexpression.
    let message = refused(sum, "precompute(B(i,j)+C(i,j),j,j,ws)");
    assert!(message.contains("not a subexpression"), "{message}");
    let message = refused(sum, "precompute(B(i,j)*D(i,j),j,j,ws)");
    assert!(message.contains("not a subexpression"), "{message}");
    // Inside it, the product is one.
    check_schedule(
        sum,
        &[("B", "ds")],
        &inputs,
        &[],
        "precompute(D(i,j)*C(i,j),j,j,ws)",
    );

    // A workspace over `i` alone would need `j` bound outside it: refused in the order
    // `i, j`, accepted once `j` is outside.
    let plus = "A(i,j) = B(i,j) + C(i,j) + D(i,j)";
    let message = refused(plus, "precompute(B(i,j)+C(i,j),i,i,ws)");
    assert!(
        message.contains("the expression's other variables are bound outside the workspace")
            && message.contains("(`j`)"),
        "{message}"
    );
    check_schedule(
        plus,
        &[("B", "dd"), ("C", "dd")],
        &inputs,
        &[],
        "reorder(i,j),precompute(B(i,j)+C(i,j),i,i,ws)",
    );
    // Once placed, the loops it reads stay outside it.
    let message = refused(
        "A(i,j) = B(i,k) * C(k,j)",
        "precompute(B(i,k)*C(k,j),j,j,ws),reorder(i,k)",
    );
    assert!(
        message.contains("a precomputed workspace's other variables stay outside it")
            && message.contains("`i` must stay outside `k`"),
        "{message}"
    );
    // A loop fused from a workspace variable and another variable of the expression
    // cannot run in the producer, in either order of the transformations (found by the
    // statement fuzzer: a wrong sum, when the fused loop was taken for the workspace's).
    let diff = "A = B(i,j) - (-B(i,j) + C(i,j))";
    let message = refused(diff, "fuse(i,j,f),precompute(-B(i,j),i,iw)");
    assert!(
        message.contains("the expression's other variables are bound outside the workspace"),
        "{message}"
    );
    let message = refused(diff, "reorder(i,j),precompute(-B(i,j),i,iw),fuse(j,i,f)");
    assert!(
        message.contains("fused variables belong to the same reduction")
            && message.contains("such as `j`"),
        "{message}"
    );
    check_schedule(
        diff,
        &[("B", "ds")],
        &inputs,
        &[],
        "reorder(i,j),precompute(-B(i,j),i,iw)",
    );
    // Two workspaces that start at one loop of a sparse output: the first one's touched
    // coordinates replace that loop (found by the fuzzer: a panic in lowering).
    let two = "Y(i,j) = B(i,j) * (C(i,j) * B(i,j) + D(i,j))";
    let message = schedule_error(
        two,
        &[("Y", "csr")],
        &inputs[0],
        "precompute(C(i,j)*B(i,j),j,jw),precompute(B(i,j),j,jv,w2)",
    );
    assert!(
        message.contains("each workspace has the loop where its producer starts"),
        "{message}"
    );
    // A workspace over coordinates read in a position space of an operand the consumer
    // no longer reads: the space would skip the workspace's other coordinates (found by
    // the fuzzer: a wrong result).
    let message = schedule_error(
        "y(i) = B(i,j) * (C(i,j) + D(i,j))",
        &[("D", "csr")],
        &inputs[0],
        "precompute(D(i,j),j,jw),pos(j,jp,D)",
    );
    assert!(
        message.contains("pos: precondition failed: the position space `jp` covers every point"),
        "{message}"
    );
    // A sparse output whose loops fuse a workspace variable with another: the touched
    // coordinates cannot stand for the fused loops, from which the other is recovered
    // (found by the fuzzer: invalid IR).
    let mut r = rng(12);
    let message = schedule_error(
        "Y(i,j) = a(i) * B(i,j)",
        &[("Y", "dq")],
        &[
            ("a", random_coo(&mut r, &[6], 0.5)),
            ("B", random_coo(&mut r, &[6, 6], 0.5)),
        ],
        "fuse(i,j,f),split(f,f0,f1,4),precompute(a(i),i,iw)",
    );
    assert!(
        message
            .contains("a sparse output reads the workspace `workspace` only along its variables"),
        "{message}"
    );
    // A reduction computed into a temporary keeps its loops.
    let message = refused(
        "A(i,j) = B(i,k) * C(k,j) + D(i,j)",
        "precompute(B(i,k)*C(k,j),j,j,ws)",
    );
    assert!(message.contains("outside reductions under"), "{message}");
    // Names: fresh, and variables that index the expression.
    let message = refused(
        plus,
        "precompute(B(i,j)+C(i,j),(i,j),(i,j),ws),precompute(ws(i,j)+D(i,j),(i,j),(i,j),ws)",
    );
    assert!(
        message.contains("the workspace has a fresh name"),
        "{message}"
    );
    let message = refused(
        "A(i) = B(i,j) * C(i,j) * D(i,j)",
        "precompute(B(i,j)*C(i,j),(i,k),(i,k),ws)",
    );
    assert!(message.contains("not an index variable"), "{message}");
    let message = refused(
        "A(i,j,k) = B(i,j) * C(i,k)",
        "precompute(B(i,j),(i,k),(i,k),ws)",
    );
    assert!(
        message.contains("the workspace's variables index the expression")
            && message.contains("`k` does not occur"),
        "{message}"
    );
}

/// Real inputs: the paper's A.2 SpMV schedule adapted to CPU threads (each thread's
/// products gathered in a register workspace over a position variable) on bcsstk13, and
/// MTTKRP with staged products and a sum staged per row on the London transport tensor.
#[test]
fn precomputes_on_real_inputs() {
    let mut r = rng(12);
    let matrix = sparsec::io::read_any(shared_data("matrices/bcsstk13.mtx"))
        .unwrap()
        .into_coo();
    let x = random_coo(&mut r, &[matrix.dims[1]], 1.0);
    check_schedule(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &[vec![("A", matrix), ("x", x)]],
        &[],
        "fuse(i,j,f),pos(f,fpos,A(i,j)),split(fpos,block,fpos1,3584),\
         split(fpos1,thread,thread_nz,7),\
         precompute(A(i,j)*x(j),thread_nz,thread_nz_pre,precomputed),\
         unroll(thread_nz_pre,7),parallelize(block,CPUThread,Atomics)",
    );
    let tensor = sparsec::io::read_any(shared_data("tensors/london_transport.tns"))
        .unwrap()
        .into_coo();
    let (k, l) = (tensor.dims[1], tensor.dims[2]);
    let inputs = vec![
        ("B", tensor),
        ("C", random_coo(&mut r, &[k, 8], 1.0)),
        ("D", random_coo(&mut r, &[l, 8], 1.0)),
    ];
    for schedule in [
        "precompute(B(i,k,l)*C(k,j),j,j)",
        "order(i,k,l,j),precompute(B(i,k,l)*D(l,j),j,j,w),split(i,i0,i1,4),\
         parallelize(i0,CPUThread,NoRaces)",
    ] {
        check_schedule(
            "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
            &[("B", "csf")],
            std::slice::from_ref(&inputs),
            &[],
            schedule,
        );
    }
}
