//! Printed names: one allocator gives every variable, array and parameter of a function a
//! distinct identifier made from its hint, so no user-chosen name (`t0`, `A_vals`, `int`)
//! can collide with another name, with the runtime's, or with a word the printing
//! target's language reserves (each target passes its own list: C's keywords and library
//! names for the C backend; CUDA's `threadIdx` or OpenCL's `kernel` for theirs).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{ArrayRef, Function, OperandId, ParamRef, Scratch, Signature, Var};

/// Hands out distinct identifiers, none of them a reserved word of the target.
#[derive(Clone, Debug)]
pub struct NameAllocator {
    reserved: Vec<&'static [&'static str]>,
    taken: HashSet<String>,
}

impl NameAllocator {
    /// An allocator with nothing taken but the target's `reserved` words (lists of them:
    /// OpenCL C reserves C's words and its own).
    pub fn new(reserved: &[&'static [&'static str]]) -> NameAllocator {
        NameAllocator {
            reserved: reserved.to_vec(),
            taken: HashSet::new(),
        }
    }

    /// A fresh identifier close to `hint`: its characters outside `[A-Za-z0-9_]` become
    /// `_`, and a suffix `_2`, `_3`, … is added when it is reserved or already given.
    /// Hints starting with the runtime's prefix `sparsec` (or with `__`) get a `u_`
    /// prefix, so no variable reaches into the runtime's or the compiler's namespace.
    pub fn fresh(&mut self, hint: &str) -> String {
        // Lowering's keys separate their parts with `\u{1}` and mark its own state with a
        // leading `#`, `@` or `%`: none of that is printed.
        let mut base: String = hint
            .trim_start_matches(['#', '@', '%'])
            .chars()
            .filter(|&c| c != '\u{1}')
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, 'v');
        }
        if base.starts_with("sparsec") || base.starts_with("__") {
            base.insert_str(0, "u_");
        }
        let mut name = base.clone();
        let mut n = 2;
        while self
            .reserved
            .iter()
            .any(|words| words.contains(&name.as_str()))
            || self.taken.contains(&name)
        {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// The identifiers of everything a function names.
#[derive(Clone, Debug)]
pub struct Names {
    vars: Vec<String>,
    scratch: Vec<String>,
    arrays: BTreeMap<ArrayRef, String>,
    params: BTreeMap<ParamRef, String>,
    /// The function's `int32_t` index arrays, whose loads a backend widens.
    narrow: BTreeSet<ArrayRef>,
}

impl Names {
    /// Name the signature's arguments first (`A2_pos`, `A1_size`, `i_size`), then the
    /// variables and scratch arrays in creation order, avoiding the target's `reserved`
    /// words.
    pub fn new(
        function: &Function,
        signature: &Signature,
        reserved: &[&'static [&'static str]],
    ) -> Names {
        let mut alloc = NameAllocator::new(reserved);
        // `A2_pos`, `A1_size`: operand, level, what.
        let level_hint = |operand: OperandId, level: usize, what: &str| {
            format!("{}{level}_{what}", function.operands[operand.0].hint)
        };
        let operand_hint = |a: &ArrayRef| match *a {
            ArrayRef::Level {
                operand,
                level,
                kind,
            } => level_hint(operand, level, kind.suffix()),
            ArrayRef::Values(operand) => format!("{}_vals", function.operands[operand.0].hint),
            ArrayRef::Scratch(s) => function.scratch_info(s).hint.clone(),
        };
        let arrays = signature
            .arrays
            .iter()
            .map(|a| (*a, alloc.fresh(&operand_hint(a))))
            .collect();
        let params = signature
            .scalars
            .iter()
            .filter_map(|s| match s {
                super::ScalarArg::Param(p) => Some(*p),
                super::ScalarArg::Threads => None,
            })
            .map(|p| {
                let hint = match p {
                    ParamRef::Level {
                        operand,
                        level,
                        kind,
                    } => level_hint(operand, level, kind.suffix()),
                    ParamRef::Extent(n) => format!("{}_size", extent_hint(function, n)),
                    ParamRef::Phase => "phase".to_string(),
                    ParamRef::Capacity => "capacity".to_string(),
                    ParamRef::Length(array) => format!("{}_len", operand_hint(&array)),
                    ParamRef::Scattered(array) => format!("{}_scattered", operand_hint(&array)),
                    ParamRef::Uneven(array) => format!("{}_uneven", operand_hint(&array)),
                    ParamRef::SumVersion => "sum_version".to_string(),
                    ParamRef::PrefetchDistance => "prefetch_distance".to_string(),
                };
                (p, alloc.fresh(&hint))
            })
            .collect();
        let vars = function.vars.iter().map(|v| alloc.fresh(&v.hint)).collect();
        let scratch = function
            .scratch
            .iter()
            .map(|s| alloc.fresh(&s.hint))
            .collect();
        Names {
            vars,
            scratch,
            arrays,
            params,
            narrow: function.narrow_arrays.clone(),
        }
    }

    /// The identifier of a variable.
    pub fn var(&self, v: Var) -> &str {
        &self.vars[v.index()]
    }

    /// The identifier of a scratch array.
    pub fn scratch(&self, s: Scratch) -> &str {
        &self.scratch[s.index()]
    }

    /// The identifier of an array (operand or scratch).
    pub fn array(&self, a: &ArrayRef) -> &str {
        match a {
            ArrayRef::Scratch(s) => self.scratch(*s),
            _ => &self.arrays[a],
        }
    }

    /// True when `a` holds `int32_t` indices (see [`Function::narrow_arrays`]).
    pub fn is_narrow(&self, a: &ArrayRef) -> bool {
        self.narrow.contains(a)
    }

    /// The identifier of a parameter.
    pub fn param(&self, p: &ParamRef) -> &str {
        &self.params[p]
    }

    /// True when the function reads parameter `p`, so that it has an identifier.
    pub fn has_param(&self, p: &ParamRef) -> bool {
        self.params.contains_key(p)
    }
}

/// Extent `n` is named after the index variable it bounds: the function's variable that
/// the front end declared `n`-th ([`Function::extent_hints`]), or `xn`.
fn extent_hint(function: &Function, n: usize) -> String {
    function
        .extent_hints
        .get(n)
        .cloned()
        .unwrap_or_else(|| format!("x{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{
        Expr, LocalType, Loop, LoopKind, OperandId, OperandInfo, OutputMode, Stmt, Type, ValueType,
    };

    #[test]
    fn fresh_names_are_distinct_identifiers() {
        let mut a = NameAllocator::new(&[&["int"]]);
        assert_eq!(a.fresh("i"), "i");
        assert_eq!(a.fresh("i"), "i_2");
        assert_eq!(a.fresh("i"), "i_3");
        assert_eq!(a.fresh("int"), "int_2");
        assert_eq!(a.fresh("2x"), "v2x");
        assert_eq!(a.fresh(""), "v");
        assert_eq!(a.fresh("a-b.c"), "a_b_c");
        assert_eq!(a.fresh("sparsec_out"), "u_sparsec_out");
        assert_eq!(a.fresh("__x"), "u___x");
        // Lowering's key syntax is not printed.
        assert_eq!(a.fresh("#\u{1}p\u{1}_begin"), "p_begin");
        assert_eq!(a.fresh("%\u{1}t0"), "t0");
        // Only the target's words are reserved.
        let mut cuda = NameAllocator::new(&[&["threadIdx", "class"]]);
        assert_eq!(cuda.fresh("threadIdx"), "threadIdx_2");
        assert_eq!(cuda.fresh("int"), "int");
    }

    #[test]
    fn no_user_name_collides_with_generated_ones() {
        // Operand `A` has level arrays `A2_pos`/`A_vals`; variables the user called the
        // same, and a temporary hinted `t0` next to a user variable `t0`, stay distinct.
        let operands = ["A", "y"]
            .iter()
            .map(|h| OperandInfo {
                hint: h.to_string(),
                values: ValueType::F64,
            })
            .collect();
        let mut f = Function::new(
            operands,
            1,
            OutputMode::Dense {
                accumulate: false,
                zeroed_by_kernel: false,
            },
        );
        f.extent_hints = vec!["A2_pos".into()];
        let user = f.fresh_var("A_vals", Type::Index);
        let user_t0 = f.fresh_var("t0", Type::Index);
        let temp = f.fresh_var("%\u{1}t0", Type::Value(ValueType::F64));
        let w = f.fresh_scratch("A2_pos", LocalType::Value);
        let vals = crate::ir::ArrayRef::Values(OperandId(0));
        let pos = crate::ir::ArrayRef::Level {
            operand: OperandId(0),
            level: 2,
            kind: crate::ir::ArrayKind::Pos,
        };
        f.locals.push(crate::ir::Local {
            array: w,
            len: Expr::Int(1),
            space: crate::ir::MemorySpace::Global,
        });
        f.body = vec![Stmt::For(Loop {
            var: user,
            start: Expr::load(pos, Expr::Int(0)),
            end: Expr::Param(ParamRef::Extent(0)),
            body: vec![
                Stmt::Decl(user_t0, Expr::Var(user)),
                Stmt::Decl(temp, Expr::load(vals, Expr::Var(user_t0))),
            ],
            kind: LoopKind::Serial,
        })];
        let signature = f.signature();
        let names = Names::new(&f, &signature, &[]);
        let mut all = vec![
            names.var(user).to_string(),
            names.var(user_t0).to_string(),
            names.var(temp).to_string(),
            names.scratch(w).to_string(),
            names.array(&vals).to_string(),
            names.array(&pos).to_string(),
            names.param(&ParamRef::Extent(0)).to_string(),
        ];
        assert_eq!(names.array(&pos), "A2_pos");
        assert_eq!(names.array(&vals), "A_vals");
        assert_eq!(names.var(user_t0), "t0");
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "names collide: {all:?}");
    }
}
