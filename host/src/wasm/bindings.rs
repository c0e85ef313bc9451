//! Host bindings of the `piton:tool` `plugin` world (wit/tool.wit).
#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    exports: { default: async },
});

pub(crate) use exports::piton::tool::tool::{Content, ToolError, ToolHints};
