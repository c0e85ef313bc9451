//! Tests of the permission diff: each kind of difference, and its class.

use piton_wit::{Hint, Hints};
use serde_json::json;

use crate::supply::capability::{Capability, ImportKind, Imports};
use crate::supply::diff::{Change, Class, diff};
use crate::supply::profile::{Profile, ToolProfile};
use crate::supply::schema_diff::SchemaChange;

fn tool(name: &str, hints: Hints) -> ToolProfile {
    ToolProfile {
        name: name.into(),
        description: format!("The {name} tool."),
        hints,
        hints_for: false,
        parallel: true,
        input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    }
}

fn profile(tools: Vec<ToolProfile>, imports: &[&str]) -> Profile {
    Profile {
        file: "t.wasm".into(),
        sha256: "aa".repeat(32),
        size: 1000,
        world: "plugin".into(),
        tools,
        imports: Imports::of(imports.iter().copied()),
    }
}

const BASE: [&str; 2] = ["wasi:cli/environment@0.2.6", "wasi:clocks/wall-clock@0.2.6"];

/// The changes from a one-tool profile with `old` hints to one with `new`.
fn hint_changes(old: Hints, new: Hints) -> Vec<Change> {
    let a = profile(vec![tool("t", old)], &BASE);
    let b = profile(vec![tool("t", new)], &BASE);
    diff(&a, &b).changes
}

fn hint(hint: Hint, now: bool) -> Change {
    Change::Hint {
        tool: "t".into(),
        hint,
        now,
    }
}

#[test]
fn the_same_profile_has_no_change() {
    let a = profile(vec![tool("t", Hints::read_only())], &BASE);
    let d = diff(&a, &a.clone());
    assert!(d.is_empty());
    assert!(!d.has_weakenings());
    assert!(d.to_string().ends_with(": no permission change\n"), "{d}");
}

#[test]
fn each_hint_that_lets_a_call_do_more_is_weaker() {
    // read_only true → false (idempotent stays true).
    let changes = hint_changes(
        Hints::read_only(),
        Hints::worst().destructive(false).idempotent(true),
    );
    assert_eq!(changes, [hint(Hint::ReadOnly, false)]);
    assert_eq!(changes[0].class(), Class::Weaker);
    let base = Hints::worst()
        .destructive(false)
        .idempotent(true)
        .open_world(false);
    let table = [
        (Hint::Destructive, base.destructive(true)),
        (Hint::Idempotent, base.idempotent(false)),
        (Hint::OpenWorld, base.open_world(true)),
    ];
    for (which, weaker) in table {
        let changes = hint_changes(base, weaker);
        assert_eq!(changes, [hint(which, weaker.get(which))], "{which}");
        assert_eq!(changes[0].class(), Class::Weaker, "{which}");
        let changes = hint_changes(weaker, base);
        assert_eq!(changes, [hint(which, base.get(which))], "{which}");
        assert_eq!(changes[0].class(), Class::Stronger, "{which}");
    }
    let changes = hint_changes(Hints::worst().destructive(false), Hints::read_only());
    assert!(changes.contains(&hint(Hint::ReadOnly, true)));
    assert!(
        changes.iter().all(|c| c.class() == Class::Stronger),
        "{changes:?}"
    );
}

#[test]
fn a_new_tool_is_weaker_and_a_removed_one_stronger() {
    let a = profile(vec![tool("a", Hints::read_only())], &BASE);
    let b = profile(
        vec![tool("a", Hints::read_only()), tool("b", Hints::worst())],
        &BASE,
    );
    let d = diff(&a, &b);
    assert_eq!(
        d.changes,
        [Change::ToolAdded {
            tool: "b".into(),
            hints: "not read_only, destructive, not idempotent, open_world".into(),
            hints_for: false,
        }]
    );
    assert!(d.has_weakenings());
    let back = diff(&b, &a);
    assert_eq!(back.changes, [Change::ToolRemoved { tool: "b".into() }]);
    assert_eq!(back.changes[0].class(), Class::Stronger);
    assert!(!back.has_weakenings());
}

#[test]
fn hints_for_appearing_is_weaker() {
    let old = tool("t", Hints::worst());
    let mut new = old.clone();
    new.hints_for = true;
    let d = diff(
        &profile(vec![old.clone()], &BASE),
        &profile(vec![new.clone()], &BASE),
    );
    let appeared = Change::HintsFor {
        tool: "t".into(),
        now: true,
    };
    assert_eq!(d.changes, [appeared]);
    assert_eq!(d.weakenings().count(), 1);
    let d = diff(&profile(vec![new], &BASE), &profile(vec![old], &BASE));
    assert_eq!(d.changes[0].class(), Class::Stronger);
}

#[test]
fn a_new_capability_import_is_weaker_a_dropped_one_stronger_a_harmless_one_minor() {
    let t = || vec![tool("t", Hints::worst())];
    let old = profile(
        t(),
        &["wasi:cli/environment@0.2.6", "wasi:clocks/wall-clock@0.2.6"],
    );
    let new = profile(
        t(),
        &[
            "wasi:http/types@0.2.6",
            "wasi:http/outgoing-handler@0.2.6",
            "wasi:random/random@0.2.6",
            "wasi:clocks/wall-clock@0.2.12",
        ],
    );
    let d = diff(&old, &new);
    let network = ImportKind::Capability(Capability::Network);
    let env = ImportKind::Capability(Capability::Environment);
    assert_eq!(
        d.changes,
        [
            Change::ImportsAdded {
                kind: network,
                interfaces: vec![
                    "wasi:http/outgoing-handler".into(),
                    "wasi:http/types".into()
                ],
                first: true,
            },
            Change::ImportsDropped {
                kind: env,
                interfaces: vec!["wasi:cli/environment".into()],
                last: true,
            },
            Change::ImportsAdded {
                kind: ImportKind::Harmless,
                interfaces: vec!["wasi:random/random".into()],
                first: false,
            },
        ]
    );
    let classes: Vec<Class> = d.changes.iter().map(Change::class).collect();
    assert_eq!(classes, [Class::Weaker, Class::Stronger, Class::Minor]);
    // A version bump of an interface is no change.
    assert!(!d.to_string().contains("wall-clock"), "{d}");

    // A second network interface, where there was one already, is weaker too.
    let more = profile(t(), &["wasi:http/types@0.2.6", "wasi:sockets/tcp@0.2.6"]);
    let d = diff(&profile(t(), &["wasi:http/types@0.2.6"]), &more);
    assert_eq!(
        d.changes,
        [Change::ImportsAdded {
            kind: network,
            interfaces: vec!["wasi:sockets/tcp".into()],
            first: false,
        }]
    );
    assert!(d.has_weakenings());
    let unknown = diff(&profile(t(), &[]), &profile(t(), &["acme:evil/backdoor"]));
    assert!(unknown.has_weakenings());
}

#[test]
fn a_schema_change_is_its_own_class_and_not_weaker() {
    let old = tool("t", Hints::read_only());
    let mut new = old.clone();
    new.input_schema = json!({
        "type": "object",
        "properties": {"q": {"type": "string"}, "lang": {"type": ["string", "null"]}},
        "required": ["q"],
    });
    let d = diff(&profile(vec![old], &BASE), &profile(vec![new], &BASE));
    assert_eq!(
        d.changes,
        [Change::Schema {
            tool: "t".into(),
            changes: vec![
                SchemaChange::Added {
                    name: "lang".into(),
                    ty: "string|null".into()
                },
                SchemaChange::NowRequired { name: "q".into() },
            ]
        }]
    );
    assert_eq!(d.changes[0].class(), Class::Schema);
    assert!(!d.has_weakenings());
    assert!(
        d.to_string()
            .contains("schema    tool t: input + lang: string|null; q now required\n"),
        "{d}"
    );
}

#[test]
fn description_parallel_and_world_are_minor() {
    let old = tool("t", Hints::read_only());
    let mut new = old.clone();
    new.description = "Another\u{1b}[2J text.".into();
    new.parallel = false;
    let mut b = profile(vec![new], &BASE);
    b.world = "toolbox-plugin".into();
    let d = diff(&profile(vec![old], &BASE), &b);
    assert_eq!(d.changes.len(), 3, "{d:?}");
    assert!(d.changes.iter().all(|c| c.class() == Class::Minor));
    let shown = d.to_string();
    assert!(
        shown.contains("minor     tool t: description \"The t tool.\" → \"Another\\\\e[2J text.\""),
        "{shown}"
    );
    assert!(!shown.contains('\u{1b}'));
}

#[test]
fn weaker_changes_come_first_and_are_marked() {
    let a = profile(vec![tool("t", Hints::read_only().open_world(false))], &BASE);
    let mut changed = tool("t", Hints::worst().destructive(false));
    changed.description = "New.".into();
    let b = profile(vec![changed], &[BASE[0], BASE[1], "wasi:http/types@0.2.6"]);
    let d = diff(&a, &b);
    let shown = d.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[0],
        "t.wasm: sha256 aaaaaaaaaaaaaaaa → aaaaaaaaaaaaaaaa: 5 changes, 4 weaker"
    );
    assert_eq!(
        lines[1],
        "  ! weaker    tool t: read_only true → false: it may now change things"
    );
    assert_eq!(
        lines[2],
        "  ! weaker    tool t: idempotent true → false: a repeated call may now do more"
    );
    assert_eq!(
        lines[3],
        "  ! weaker    tool t: open_world false → true: it may now reach outside (granted hosts)"
    );
    assert_eq!(
        lines[4],
        "  ! weaker    network: now imports wasi:http/types (new capability)"
    );
    assert_eq!(
        lines[5],
        "    minor     tool t: description \"The t tool.\" → \"New.\""
    );
}

#[test]
fn a_diff_serializes_for_scripts() {
    let a = profile(vec![tool("t", Hints::read_only())], &BASE);
    let b = profile(
        vec![tool("t", Hints::read_only())],
        &[BASE[0], BASE[1], "wasi:sockets/tcp@0.2.6"],
    );
    let json = serde_json::to_value(diff(&a, &b)).ok();
    let changes = json.as_ref().map(|j| &j["changes"]);
    assert_eq!(
        changes,
        Some(&json!([{
            "change": "imports_added",
            "kind": "network",
            "interfaces": ["wasi:sockets/tcp"],
            "first": true,
        }]))
    );
    let json = serde_json::to_value(a).ok();
    assert_eq!(
        json.as_ref().map(|j| &j["imports"]["environment"]),
        Some(&json!(["wasi:cli/environment"]))
    );
}
