//! Code mode: one tool (`run_python`, piton.toml `[code]`) whose argument is a short
//! Python program that calls the registry's tools as functions, so that a model
//! reads one result instead of every intermediate one (docs/code-mode.md).
//!
//! The program runs in code mode's interpreter ([`interpreter`]), one more guest
//! component with nothing granted: no files, no network, no environment. Its only
//! way out is the `piton:tool/registry` import, and each call through it is a call
//! of the registry's call path ([`crate::tool::Caller`]): the input schema, the
//! call's hints, approval and consent, the tool's own sandbox, grants and limits,
//! an audit record naming the run, and the metrics ([`calls`]). [`tool`] is the
//! tool itself; [`signature`] and [`describe`] what the model reads about it;
//! [`answer`] what a run gives back.

pub(crate) mod answer;
mod bindings;
pub(crate) mod calls;
pub(crate) mod describe;
pub mod interpreter;
pub(crate) mod setup;
pub(crate) mod signature;
pub mod tool;
