//! isl's AST generator: a schedule over a union of statement domains becomes a tree of
//! loops, conditions, blocks and statement instances, copied out of isl into plain Rust
//! values (nothing here outlives the call that builds it).

use super::union::{
    isl_union_map_free, isl_union_map_intersect_domain_union_set, isl_union_map_read_from_str,
    isl_union_set_read_from_str, RawUnionMap,
};
use super::*;

#[repr(C)]
struct RawBuild {
    _private: [u8; 0],
}
#[repr(C)]
struct RawNode {
    _private: [u8; 0],
}
#[repr(C)]
struct RawNodeList {
    _private: [u8; 0],
}
#[repr(C)]
struct RawExpr {
    _private: [u8; 0],
}
#[repr(C)]
struct RawId {
    _private: [u8; 0],
}

/// `enum isl_ast_node_type` (isl/ast_type.h).
const NODE_FOR: c_int = 1;
const NODE_IF: c_int = 2;
const NODE_BLOCK: c_int = 3;
const NODE_MARK: c_int = 4;
const NODE_USER: c_int = 5;
/// `enum isl_ast_expr_type`.
const EXPR_OP: c_int = 0;
const EXPR_ID: c_int = 1;
const EXPR_INT: c_int = 2;

extern "C" {
    fn isl_ast_build_from_context(set: *mut RawSet) -> *mut RawBuild;
    fn isl_ast_build_set_options(build: *mut RawBuild, options: *mut RawUnionMap) -> *mut RawBuild;
    fn isl_ast_build_node_from_schedule_map(
        build: *mut RawBuild,
        schedule: *mut RawUnionMap,
    ) -> *mut RawNode;
    fn isl_ast_build_free(build: *mut RawBuild) -> *mut RawBuild;
    fn isl_ast_node_free(node: *mut RawNode) -> *mut RawNode;
    fn isl_ast_node_get_type(node: *mut RawNode) -> c_int;
    fn isl_ast_node_for_get_iterator(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_for_get_init(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_for_get_cond(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_for_get_inc(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_for_get_body(node: *mut RawNode) -> *mut RawNode;
    fn isl_ast_node_for_is_degenerate(node: *mut RawNode) -> c_int;
    fn isl_ast_node_if_get_cond(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_if_get_then_node(node: *mut RawNode) -> *mut RawNode;
    fn isl_ast_node_if_has_else_node(node: *mut RawNode) -> c_int;
    fn isl_ast_node_if_get_else_node(node: *mut RawNode) -> *mut RawNode;
    fn isl_ast_node_block_get_children(node: *mut RawNode) -> *mut RawNodeList;
    fn isl_ast_node_mark_get_node(node: *mut RawNode) -> *mut RawNode;
    fn isl_ast_node_user_get_expr(node: *mut RawNode) -> *mut RawExpr;
    fn isl_ast_node_list_size(list: *mut RawNodeList) -> c_int;
    fn isl_ast_node_list_get_at(list: *mut RawNodeList, index: c_int) -> *mut RawNode;
    fn isl_ast_node_list_free(list: *mut RawNodeList) -> *mut RawNodeList;
    fn isl_ast_expr_free(expr: *mut RawExpr) -> *mut RawExpr;
    fn isl_ast_expr_get_type(expr: *mut RawExpr) -> c_int;
    fn isl_ast_expr_get_val(expr: *mut RawExpr) -> *mut RawVal;
    fn isl_ast_expr_get_id(expr: *mut RawExpr) -> *mut RawId;
    fn isl_ast_expr_op_get_type(expr: *mut RawExpr) -> c_int;
    fn isl_ast_expr_op_get_n_arg(expr: *mut RawExpr) -> c_int;
    fn isl_ast_expr_op_get_arg(expr: *mut RawExpr, pos: c_int) -> *mut RawExpr;
    fn isl_id_get_name(id: *mut RawId) -> *const c_char;
    fn isl_id_free(id: *mut RawId) -> *mut RawId;
}

/// An operation of an AST expression, in `enum isl_ast_expr_op_type`'s order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AstOp {
    And,
    AndThen,
    Or,
    OrElse,
    Max,
    Min,
    Minus,
    Add,
    Sub,
    Mul,
    /// Exact division.
    Div,
    /// Division rounding towards negative infinity.
    FdivQ,
    /// Division of a non-negative dividend.
    PdivQ,
    /// Remainder of a non-negative dividend.
    PdivR,
    /// Remainder, only compared against zero.
    ZdivR,
    Cond,
    Select,
    Eq,
    Le,
    Lt,
    Ge,
    Gt,
    Call,
    Access,
    Member,
    AddressOf,
}

const OPS: [AstOp; 26] = [
    AstOp::And,
    AstOp::AndThen,
    AstOp::Or,
    AstOp::OrElse,
    AstOp::Max,
    AstOp::Min,
    AstOp::Minus,
    AstOp::Add,
    AstOp::Sub,
    AstOp::Mul,
    AstOp::Div,
    AstOp::FdivQ,
    AstOp::PdivQ,
    AstOp::PdivR,
    AstOp::ZdivR,
    AstOp::Cond,
    AstOp::Select,
    AstOp::Eq,
    AstOp::Le,
    AstOp::Lt,
    AstOp::Ge,
    AstOp::Gt,
    AstOp::Call,
    AstOp::Access,
    AstOp::Member,
    AstOp::AddressOf,
];

/// An expression of the generated AST: integers, names (iterators, parameters, statement
/// names) and operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AstExpr {
    Int(i64),
    Id(String),
    Op(AstOp, Vec<AstExpr>),
}

/// A node of the generated AST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ast {
    /// `for (iterator = init; cond; iterator += inc) body`; a degenerate loop runs once,
    /// with the iterator at `init`.
    For {
        iterator: String,
        init: AstExpr,
        cond: AstExpr,
        inc: AstExpr,
        degenerate: bool,
        body: Box<Ast>,
    },
    If {
        cond: AstExpr,
        then: Box<Ast>,
        otherwise: Option<Box<Ast>>,
    },
    Block(Vec<Ast>),
    /// One statement instance: a call of the statement's name with the value of each of
    /// its domain's dimensions.
    User(AstExpr),
}

impl Isl {
    /// Scan `domain` (a union set of named statement spaces) in the order of `schedule`
    /// (a union map from those spaces to one common space), under `context` (a set over
    /// the parameters alone), with AST build `options` (a union map, e.g.
    /// `{ [t0, t1] -> separate[x] }`) when given.
    pub fn ast(
        &self,
        context: &str,
        domain: &str,
        schedule: &str,
        options: Option<&str>,
    ) -> Result<Ast, String> {
        let text =
            |s: &str| CString::new(s).map_err(|_| "an AST input holds a NUL byte".to_string());
        let (context_c, domain_c, schedule_c) = (text(context)?, text(domain)?, text(schedule)?);
        let options_c = options.map(text).transpose()?;
        let ctx = self.0 .0;
        let fail = |what: &str| {
            self.wrap(std::ptr::null_mut(), what)
                .err()
                .unwrap_or_default()
        };
        // SAFETY: every call takes the previous result or a fresh object; isl propagates
        // a null argument to a null result, which is checked before use, and the tree is
        // freed once copied.
        unsafe {
            let context = isl_set_read_from_str(ctx, context_c.as_ptr());
            let mut build = isl_ast_build_from_context(context);
            if let Some(options) = &options_c {
                let options = isl_union_map_read_from_str(ctx, options.as_ptr());
                build = isl_ast_build_set_options(build, options);
            }
            let domain = isl_union_set_read_from_str(ctx, domain_c.as_ptr());
            let schedule = isl_union_map_intersect_domain_union_set(
                isl_union_map_read_from_str(ctx, schedule_c.as_ptr()),
                domain,
            );
            if build.is_null() || schedule.is_null() {
                isl_ast_build_free(build);
                isl_union_map_free(schedule);
                return Err(fail("isl could not read the AST generator's input"));
            }
            let root = isl_ast_build_node_from_schedule_map(build, schedule);
            isl_ast_build_free(build);
            if root.is_null() {
                return Err(fail("isl's AST generator failed"));
            }
            let ast = copy_node(root);
            isl_ast_node_free(root);
            ast
        }
    }
}

/// # Safety
/// `node` is a live node, kept.
unsafe fn copy_node(node: *mut RawNode) -> Result<Ast, String> {
    // Children come back as new references, freed here after copying.
    let child = |raw: *mut RawNode| -> Result<Ast, String> {
        if raw.is_null() {
            return Err("isl returned a null AST node".into());
        }
        let out = copy_node(raw);
        isl_ast_node_free(raw);
        out
    };
    match isl_ast_node_get_type(node) {
        NODE_FOR => {
            let iterator = match take_expr(isl_ast_node_for_get_iterator(node))? {
                AstExpr::Id(name) => name,
                other => return Err(format!("isl gave a loop iterator {other:?}")),
            };
            Ok(Ast::For {
                iterator,
                init: take_expr(isl_ast_node_for_get_init(node))?,
                cond: take_expr(isl_ast_node_for_get_cond(node))?,
                inc: take_expr(isl_ast_node_for_get_inc(node))?,
                degenerate: isl_ast_node_for_is_degenerate(node) == 1,
                body: Box::new(child(isl_ast_node_for_get_body(node))?),
            })
        }
        NODE_IF => Ok(Ast::If {
            cond: take_expr(isl_ast_node_if_get_cond(node))?,
            then: Box::new(child(isl_ast_node_if_get_then_node(node))?),
            otherwise: match isl_ast_node_if_has_else_node(node) {
                1 => Some(Box::new(child(isl_ast_node_if_get_else_node(node))?)),
                _ => None,
            },
        }),
        NODE_BLOCK => {
            let list = isl_ast_node_block_get_children(node);
            if list.is_null() {
                return Err("isl returned a null block".into());
            }
            let mut out = Vec::new();
            for k in 0..isl_ast_node_list_size(list).max(0) {
                match child(isl_ast_node_list_get_at(list, k)) {
                    Ok(n) => out.push(n),
                    Err(e) => {
                        isl_ast_node_list_free(list);
                        return Err(e);
                    }
                }
            }
            isl_ast_node_list_free(list);
            Ok(Ast::Block(out))
        }
        NODE_MARK => child(isl_ast_node_mark_get_node(node)),
        NODE_USER => Ok(Ast::User(take_expr(isl_ast_node_user_get_expr(node))?)),
        other => Err(format!("isl returned an AST node of unknown type {other}")),
    }
}

/// Copy and free an expression isl handed over.
///
/// # Safety
/// `expr` is null or an expression owned by the caller.
unsafe fn take_expr(expr: *mut RawExpr) -> Result<AstExpr, String> {
    if expr.is_null() {
        return Err("isl returned a null AST expression".into());
    }
    let out = copy_expr(expr);
    isl_ast_expr_free(expr);
    out
}

/// # Safety
/// `expr` is a live expression, kept.
unsafe fn copy_expr(expr: *mut RawExpr) -> Result<AstExpr, String> {
    match isl_ast_expr_get_type(expr) {
        EXPR_INT => {
            let v = isl_ast_expr_get_val(expr);
            if v.is_null() {
                return Err("isl returned a null integer".into());
            }
            let (num, den) = (isl_val_get_num_si(v), isl_val_get_den_si(v));
            isl_val_free(v);
            if den != 1 {
                return Err("isl returned a rational in an AST".into());
            }
            Ok(AstExpr::Int(num))
        }
        EXPR_ID => {
            let id = isl_ast_expr_get_id(expr);
            if id.is_null() {
                return Err("isl returned a null name".into());
            }
            let name = isl_id_get_name(id);
            let out = if name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(name).to_string_lossy().into_owned()
            };
            isl_id_free(id);
            Ok(AstExpr::Id(out))
        }
        EXPR_OP => {
            let op = usize::try_from(isl_ast_expr_op_get_type(expr))
                .ok()
                .and_then(|k| OPS.get(k).copied())
                .ok_or("isl returned an unknown AST operation")?;
            let mut args = Vec::new();
            for k in 0..isl_ast_expr_op_get_n_arg(expr).max(0) {
                args.push(take_expr(isl_ast_expr_op_get_arg(expr, k))?);
            }
            Ok(AstExpr::Op(op, args))
        }
        other => Err(format!(
            "isl returned an AST expression of unknown type {other}"
        )),
    }
}
