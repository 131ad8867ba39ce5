//! Polyhedral machinery shared by the front ends that scan integer sets: a safe binding
//! to isl ([`isl`]) and the reading of isl's AST back into IR ([`read`]), behind a trait
//! for what a front end decides (its names, statement instances, parallel loops and
//! loops of its own). The sparse polyhedral front end ([`crate::spf`]) uses them today
//! and the affine front end will share them. Nothing here knows about a front end's
//! statements.

pub mod isl;
pub mod read;
