//! A core module made a component, for the languages whose toolchains give a WASI
//! preview1 reactor module (C, Go): the world it exports is embedded when the module
//! does not carry it, and the `wit-component` crate adapts its preview1 imports with
//! wasmtime's preview1 reactor adapter, so no other tool is needed.

/// The contract a module's world is taken from.
const WIT: &str = include_str!("../../../wit/tool.wit");

/// The component of a core reactor `module`. With `world`, that world of
/// `wit/tool.wit` is embedded first (Go's bindings carry no component type); without
/// it, the module's own custom section (C's) names it.
pub(crate) fn componentize(module: &[u8], world: Option<&str>) -> Result<Vec<u8>, String> {
    use wasi_preview1_component_adapter_provider::{
        WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
    };
    let mut module = module.to_vec();
    if let Some(world) = world {
        embed_world(&mut module, world)?;
    }
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .and_then(|encoder| {
            encoder.adapter(
                WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )
        })
        .and_then(|encoder| encoder.encode())
        .map_err(|e| format!("cannot make the module a component: {e:#}"))
}

/// Adds the component-type custom section of `world` to `module`.
fn embed_world(module: &mut Vec<u8>, world: &str) -> Result<(), String> {
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve
        .push_str("tool.wit", WIT)
        .map_err(|e| format!("wit/tool.wit does not parse: {e:#}"))?;
    let world = resolve
        .select_world(&[package], Some(world))
        .map_err(|e| format!("wit/tool.wit has no world {world}: {e:#}"))?;
    wit_component::embed_component_metadata(
        module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .map_err(|e| format!("cannot embed the world in the module: {e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_a_core_module_are_refused_with_a_message() {
        let error =
            componentize(b"\0asm\x0d\0\x01\0", None).expect_err("a component, not a module");
        assert!(
            error.starts_with("cannot make the module a component"),
            "{error}"
        );
    }

    #[test]
    fn a_module_exporting_nothing_of_the_world_is_refused() {
        // The empty module: valid, but it exports none of toolbox-plugin's functions.
        let error = componentize(b"\0asm\x01\0\0\0", Some("toolbox-plugin"))
            .expect_err("the world's exports are missing");
        assert!(error.contains("toolbox"), "{error}");
    }
}
