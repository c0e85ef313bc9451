//! Host bindings of the `code-mode` world (wit/tool.wit): the `registry` import
//! code mode's interpreter calls tools through, and the `program` export it runs a
//! program with.
#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "code-mode",
    imports: { default: async },
    exports: { default: async },
});

pub(crate) use exports::piton::tool::program::{
    Callable, Failure, Finished, RunError, RunLimits, Value,
};
pub(crate) use piton::tool::registry::CallError;
pub(crate) use piton::tool::types::{Content, Image, ToolError};
