//! Several tools in one component: [`toolbox!`](crate::toolbox) lists types
//! implementing [`Tool`] and exports them as the `piton:tool/toolbox` interface.

use crate::bindings::piton::tool::types as wit;
use crate::toolbox_bindings::exports::piton::tool::toolbox::{Guest, ToolDecl};
use crate::{Hints, Tool, ToolError};

/// One tool of a toolbox: the functions of its [`Tool`] implementation.
#[derive(Clone, Copy)]
pub struct ToolboxEntry {
    spec: fn() -> crate::ToolSpec,
    hints: fn() -> Hints,
    hints_for: fn(&str) -> Option<Hints>,
    has_hints_for: bool,
    run: fn(&str) -> Result<Vec<crate::Content>, ToolError>,
}

impl std::fmt::Debug for ToolboxEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolboxEntry")
            .field("name", &(self.spec)().name)
            .finish_non_exhaustive()
    }
}

impl ToolboxEntry {
    /// The entry of the tool `T`.
    pub fn of<T: Tool>() -> Self {
        Self {
            spec: T::spec,
            hints: T::hints,
            hints_for: T::hints_for,
            has_hints_for: T::HAS_HINTS_FOR,
            run: T::run,
        }
    }
}

/// The tools a component exports as its toolbox; [`toolbox!`](crate::toolbox)
/// implements it.
pub trait Toolbox {
    /// Every tool of the box, names unique.
    fn entries() -> Vec<ToolboxEntry>;
}

/// Exports the listed types implementing [`Tool`] (the `XTool` structs of
/// `#[tool(export = false)]` functions, or your own) as the component's
/// `piton:tool/toolbox` interface: one component, several tools.
///
/// A crate exports once: a second `toolbox!`, or a `#[tool]` without
/// `export = false`, is a compile error naming `only_one_piton_tool_per_crate`.
///
/// ```ignore
/// piton_guest_sdk::toolbox!(CountTool, WipeTool);
/// ```
#[macro_export]
macro_rules! toolbox {
    ($($tool:ty),+ $(,)?) => {
        #[doc(hidden)]
        struct __PitonToolbox;

        impl $crate::Toolbox for __PitonToolbox {
            fn entries() -> ::std::vec::Vec<$crate::ToolboxEntry> {
                ::std::vec![$($crate::ToolboxEntry::of::<$tool>()),+]
            }
        }

        $crate::toolbox_bindings::export!(__PitonToolbox with_types_in $crate::toolbox_bindings);

        // A second export would define the same symbols; this duplicate name turns
        // that link error into a compile error that says what is wrong.
        #[doc(hidden)]
        #[macro_export]
        macro_rules! only_one_piton_tool_per_crate {
            () => {};
        }
    };
}

/// The entry named `tool`: the host asks only for names `tools` returned.
fn entry<T: Toolbox>(tool: &str) -> ToolboxEntry {
    match T::entries().into_iter().find(|e| (e.spec)().name == tool) {
        Some(entry) => entry,
        None => panic!("this toolbox has no tool named {tool:?}"),
    }
}

impl<T: Toolbox> Guest for T {
    fn tools() -> Vec<ToolDecl> {
        T::entries()
            .into_iter()
            .map(|entry| {
                let spec = (entry.spec)();
                ToolDecl {
                    spec: wit::ToolSpec {
                        name: spec.name,
                        description: spec.description,
                        input_schema: spec.input_schema.to_string(),
                        parallel: spec.parallel,
                    },
                    hints: (entry.hints)().into(),
                    has_hints_for: entry.has_hints_for,
                }
            })
            .collect()
    }

    fn hints_for(tool: String, args: String) -> Option<wit::ToolHints> {
        (entry::<T>(&tool).hints_for)(&args).map(Into::into)
    }

    fn run(tool: String, args: String) -> Result<Vec<wit::Content>, wit::ToolError> {
        match (entry::<T>(&tool).run)(&args) {
            Ok(contents) => Ok(contents.into_iter().map(Into::into).collect()),
            Err(ToolError::Input(message)) => Err(wit::ToolError::Input(message)),
            Err(ToolError::Failed(message)) => Err(wit::ToolError::Failed(message)),
        }
    }
}
