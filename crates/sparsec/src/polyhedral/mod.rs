//! Polyhedral machinery shared by the front ends that scan integer sets: a safe binding
//! to isl ([`isl`]), which the sparse polyhedral front end ([`crate::spf`]) uses today and
//! the affine front end will share. Nothing here knows about a front end's statements.

pub mod isl;
