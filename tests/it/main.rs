//! piton's end-to-end tests: one binary, a module per area.

mod cli;
mod hostile;
mod loading;
mod registry;
mod support;
