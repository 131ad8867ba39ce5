//! Storage that cannot be allocated is refused with an error naming the bytes it needs,
//! before anything is allocated, instead of aborting the process or paging for minutes.

use std::time::{Duration, Instant};

use sparsec::format::Format;
use sparsec::tensor::{Coo, Tensor, TensorError, ValueType};

const HUGE: usize = 3_000_000_000;
/// Large enough that one value per row (24 TB) exceeds any machine's memory.
const HUGER: usize = 3_000_000_000_000;

/// Pack a one-entry `dims` tensor into `format`: it must fail fast with a size error.
fn refused(dims: &[usize], format: &str) -> String {
    let coo = Coo::new(dims.to_vec(), vec![7; dims.len()], vec![1.0]).unwrap();
    let format = Format::parse(format, dims.len()).unwrap();
    let started = Instant::now();
    let e = Tensor::from_coo(&coo, &format, ValueType::F64)
        .expect_err("storage of tens of GiB or more is refused");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}: storage was allocated",
        started.elapsed()
    );
    assert!(matches!(e, TensorError::Unrepresentable { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("bytes"), "{text}");
    text
}

#[test]
fn impossible_storage_is_an_error() {
    // 9e18 values: more bytes than the address space.
    let text = refused(&[HUGE, HUGE], "dense");
    assert!(text.contains("beyond the address space"), "{text}");
    // Padded levels: one diagonal or ELL slot, a hash table or bytemap per row, row
    // positions of CSR.
    for format in ["dia", "ell", "dh", "db", "ds"] {
        let text = refused(&[HUGER, HUGER], format);
        assert!(text.contains("needs"), "{format}: {text}");
    }
    // A 2^40-long dense vector: 8 TiB.
    let text = refused(&[1 << 40], "dense");
    assert!(
        text.contains("the values array needs 8796093022208 bytes"),
        "{text}"
    );
}

/// Large storage that fits is still made.
#[test]
fn large_possible_storage_is_made() {
    let coo = Coo::new(vec![1 << 20, 4], vec![5, 3], vec![2.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("dense", 2).unwrap(), ValueType::F64).unwrap();
    assert_eq!(t.stored_values(), 1 << 22);
    // Fully hashed, one entry of a 3e9 x 3e9 matrix takes a few slots.
    let coo = Coo::new(vec![HUGE, HUGE], vec![7, 7], vec![1.0]).unwrap();
    let t = Tensor::from_coo(&coo, &Format::parse("hash", 2).unwrap(), ValueType::F64).unwrap();
    assert!(t.stored_values() < 16);
}

/// Generated inputs of more components than memory holds are errors naming the bytes,
/// and sparse ones of few entries over huge dimensions are made.
#[test]
fn generators_refuse_what_cannot_be_allocated() {
    use sparsec::generate;
    let too_large = |result: Result<Coo, TensorError>| match result {
        Err(TensorError::TooLarge(why)) => why,
        other => panic!(
            "expected an allocation error, got {:?}",
            other.map(|c| c.len())
        ),
    };
    for dims in [vec![HUGER], vec![HUGE, HUGE], vec![usize::MAX, 2]] {
        let why = too_large(generate::dense(&dims, 1));
        assert!(
            why.contains("bytes") || why.contains("address space"),
            "{why}"
        );
    }
    let why = too_large(generate::banded([HUGER, HUGER], 1, 1));
    assert!(why.contains("bytes"), "{why}");
    let why = too_large(generate::power_law(&[HUGER, 4], 8, 1.0, 1));
    assert!(why.contains("bytes"), "{why}");
    let why = too_large(generate::skewed_rows(HUGER, 4, 1.0, 1.0, 1));
    assert!(why.contains("bytes"), "{why}");
    let sparse = generate::uniform(&[HUGE, HUGE], 1e-18, 1).unwrap();
    assert!(sparse.len() <= 10, "{}", sparse.len());
}

/// A compressed level under a dense level of 2^40 under a compressed one: its segment
/// starts are counted only as tuples arrive, and the second tuple needs terabytes of them
/// (the statement fuzzer found this aborting with `sds` and 2^31).
#[test]
fn segment_starts_counted_as_tuples_arrive_are_allocated_fallibly() {
    let huge = 1usize << 40;
    let coords = vec![0, 0, 0, 5, huge as i64 - 1, 5];
    let coo = Coo::new(vec![6, huge, 6], coords, vec![1.0, 2.0]).unwrap();
    let format = Format::parse("sds", 3).unwrap();
    let e = Tensor::from_coo(&coo, &format, ValueType::F64).expect_err("terabytes of starts");
    assert!(
        e.to_string()
            .contains("segment starts of storage level 3 needs"),
        "{e}"
    );
}
