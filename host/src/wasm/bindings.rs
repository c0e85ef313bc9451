//! Host bindings of the `piton:tool` worlds (wit/tool.wit): `plugin` (one tool) and
//! `toolbox-plugin` (several tools), sharing the `types` interface's types.
#![allow(missing_docs, unreachable_pub)]

/// The `plugin` world: a component that exports one tool.
pub(crate) mod plugin {
    #![allow(missing_docs, unreachable_pub)]
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
        exports: { default: async },
    });
}

/// The `toolbox-plugin` world: a component that exports several tools.
pub(crate) mod toolbox {
    #![allow(missing_docs, unreachable_pub)]
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "toolbox-plugin",
        exports: { default: async },
        with: { "piton:tool/types": crate::wasm::bindings::plugin::piton::tool::types },
    });
}

pub(crate) use plugin::exports::piton::tool::tool::{Content, ToolError, ToolHints};
pub(crate) use plugin::{Plugin, PluginPre};
pub(crate) use toolbox::exports::piton::tool::toolbox::ToolDecl;
pub(crate) use toolbox::{ToolboxPlugin, ToolboxPluginPre};

/// A fresh instance of a tool's component, of either world.
pub(crate) enum Guest {
    /// Of a `plugin`.
    Plugin(Plugin),
    /// Of a `toolbox-plugin`.
    Toolbox(ToolboxPlugin),
}
