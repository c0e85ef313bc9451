//! Where tools come from and what trusting them means: a component's permission
//! profile (its tools, hints, input schemas and the capabilities its imports could
//! use, with what piton.toml grants each tool), and the permission diff between two
//! versions of a component that `piton update` shows before it replaces one.

pub mod capability;
pub mod diff;
#[cfg(test)]
mod diff_tests;
pub mod grant;
pub mod profile;
pub mod schema_diff;
