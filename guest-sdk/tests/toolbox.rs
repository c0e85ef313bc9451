//! Several `#[tool(export = false)]` functions exported together by `toolbox!`.

use piton_guest_sdk::{Content, Hints, Tool, Toolbox as _, tool};

/// Count the words in a text.
///
/// Args:
///     text: The text to count
#[tool(read_only, open_world = false, export = false)]
fn words(text: String) -> usize {
    text.split_whitespace().count()
}

/// Say the text louder.
///
/// Args:
///     text: The text to shout
#[tool(open_world = false, export = false, hints_for = shout_hints)]
fn shout(text: String) -> String {
    text.to_uppercase()
}

/// Shouting is harmless.
fn shout_hints(_: &piton_guest_sdk::serde_json::Value) -> Option<Hints> {
    Some(Hints::read_only().open_world(false))
}

piton_guest_sdk::toolbox!(WordsTool, ShoutTool);

#[test]
fn the_toolbox_lists_each_tool_and_each_runs_as_before() {
    use piton_guest_sdk::toolbox_bindings::exports::piton::tool::toolbox::Guest;
    assert_eq!(__PitonToolbox::entries().len(), 2);
    let decls = <__PitonToolbox as Guest>::tools();
    let names: Vec<&str> = decls.iter().map(|d| d.spec.name.as_str()).collect();
    assert_eq!(names, ["words", "shout"]);
    assert!(decls[0].hints.read_only && !decls[1].hints.read_only);
    // Only a tool with a `hints_for` makes the host start an instance to ask it.
    assert_eq!(
        decls.iter().map(|d| d.has_hints_for).collect::<Vec<_>>(),
        [false, true]
    );
    let out = <__PitonToolbox as Guest>::run("shout".into(), r#"{"text": "a"}"#.into());
    assert!(matches!(&out, Ok(c) if c.len() == 1), "{out:?}");
    assert_eq!(WordsTool::hints(), Hints::read_only().open_world(false));
    assert_eq!(
        ShoutTool::run(r#"{"text": "hi"}"#),
        Ok(vec![Content::Text("HI".into())])
    );
}
