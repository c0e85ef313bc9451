//! Permission profiles and diffs of real components: three versions of one `lookup`
//! tool (tests/guests/lookup-*) — the first read-only and closed-world, the second
//! reaching the network over wasi:http and no longer read-only, the third the first
//! with one more argument.

use piton_host::Hints;
use piton_host::config::Config;
use piton_host::supply::capability::{Capability, ImportKind};
use piton_host::supply::diff::{Change, Class, diff};
use piton_host::supply::profile::Profile;
use piton_host::supply::schema_diff::SchemaChange;
use piton_tests::guests;
use piton_wit::Hint;

use crate::support::{piton, run, runtime, stdout};

async fn profile(path: &str) -> Profile {
    Profile::of_file(path.as_ref(), runtime())
        .await
        .unwrap_or_else(|e| panic!("{path} profiles: {e}"))
}

fn network() -> ImportKind {
    ImportKind::Capability(Capability::Network)
}

#[tokio::test]
async fn a_profile_has_the_tools_hints_schema_and_imported_capabilities() {
    let v1 = profile(guests::LOOKUP_V1).await;
    assert_eq!(v1.world, "plugin");
    assert_eq!(v1.sha256.len(), 64);
    let [tool] = v1.tools.as_slice() else {
        panic!("one tool: {v1:?}")
    };
    assert_eq!(tool.name, "lookup");
    assert_eq!(tool.description, "Look a word up in a short glossary.");
    assert_eq!(tool.hints, Hints::read_only().open_world(false));
    assert!(tool.hints_for, "a plugin's hints-for may always answer");
    assert_eq!(tool.input_schema["required"], serde_json::json!(["word"]));
    assert!(!v1.imports.uses(Capability::Network), "{:?}", v1.imports);
    assert!(!v1.imports.uses(Capability::Files), "{:?}", v1.imports);

    let v2 = profile(guests::LOOKUP_V2_NET).await;
    let net: Vec<&str> = v2.imports.of_kind(network()).collect();
    assert_eq!(net, ["wasi:http/outgoing-handler", "wasi:http/types"]);
}

#[tokio::test]
async fn a_toolbox_profile_has_each_tool_and_its_own_hints_for() {
    let p = profile(guests::TOOLBOX_SDK).await;
    assert_eq!(p.world, "toolbox-plugin");
    let tools: Vec<(&str, bool)> = p
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.hints_for))
        .collect();
    assert_eq!(tools, [("append", true), ("words", false)]);
}

#[tokio::test]
async fn a_version_that_reaches_the_network_and_drops_read_only_is_weaker() {
    let (v1, v2) = (
        profile(guests::LOOKUP_V1).await,
        profile(guests::LOOKUP_V2_NET).await,
    );
    let d = diff(&v1, &v2);
    let hint = |hint, now| Change::Hint {
        tool: "lookup".into(),
        hint,
        now,
    };
    let weaker: Vec<&Change> = d.weakenings().collect();
    assert_eq!(
        weaker,
        [
            &hint(Hint::ReadOnly, false),
            &hint(Hint::Idempotent, false),
            &hint(Hint::OpenWorld, true),
            &Change::ImportsAdded {
                kind: network(),
                interfaces: vec![
                    "wasi:http/outgoing-handler".into(),
                    "wasi:http/types".into()
                ],
                first: true,
            },
        ]
    );
    assert_eq!(d.of_class(Class::Schema).count(), 0, "{d}");
    assert_eq!(d.of_class(Class::Stronger).count(), 0, "{d}");

    let shown = d.to_string();
    for line in [
        "  ! weaker    tool lookup: read_only true → false: it may now change things\n",
        "  ! weaker    tool lookup: open_world false → true: it may now reach outside (granted hosts)\n",
        "  ! weaker    network: now imports wasi:http/outgoing-handler, wasi:http/types (new capability)\n",
    ] {
        assert!(shown.contains(line), "no {line:?} in:\n{shown}");
    }
    assert!(
        shown.starts_with(&format!(
            "{}: sha256 {} → {}: ",
            guests::LOOKUP_V2_NET,
            &v1.sha256[..16],
            &v2.sha256[..16]
        )),
        "{shown}"
    );

    // Going back is no weakening.
    let back = diff(&v2, &v1);
    assert!(!back.has_weakenings(), "{back}");
    assert_eq!(back.of_class(Class::Stronger).count(), 4, "{back}");
}

#[tokio::test]
async fn a_version_with_only_a_schema_change_has_no_weakening() {
    let (v1, v3) = (
        profile(guests::LOOKUP_V1).await,
        profile(guests::LOOKUP_V3_SCHEMA).await,
    );
    assert_ne!(v1.sha256, v3.sha256);
    let d = diff(&v1, &v3);
    assert_eq!(
        d.changes,
        [Change::Schema {
            tool: "lookup".into(),
            changes: vec![SchemaChange::Added {
                name: "lang".into(),
                ty: "string|null".into(),
            }],
        }]
    );
    assert!(!d.has_weakenings());
    assert!(!d.is_empty());
    assert!(
        d.to_string().ends_with(
            ": 1 change, 0 weaker\n    schema    tool lookup: input + lang: string|null\n"
        ),
        "{d}"
    );
}

#[tokio::test]
async fn the_profile_says_what_piton_toml_grants_each_tool() {
    let v2 = profile(guests::LOOKUP_V2_NET).await;
    let none = v2.show(Some(&v2.granted(&Config::default()))).to_string();
    assert!(
        none.contains("\n    network      wasi:http/outgoing-handler, wasi:http/types\n"),
        "{none}"
    );
    assert!(
        none.contains("\n  tool lookup: not read_only, not destructive, not idempotent, open_world\n    Look a word up in a short glossary.\n"),
        "{none}"
    );
    assert!(none.contains("\n    network:     not granted\n"), "{none}");

    let dir = tempfile::tempdir().expect("a temp folder");
    let file = dir.path().join("piton.toml");
    let config = Config::parse(
        "[tools.lookup]\n\
         network = [{ host = \"dictionary.example.com:443\", headers = { Authorization = \"Bearer ${DICT_TOKEN}\" } }]\n\
         env = { DICT_LANG = \"en\" }\n",
        &file,
        &|name| (name == "DICT_TOKEN").then(|| "s3cret".to_owned()),
    )
    .expect("piton.toml parses");
    let shown = v2.show(Some(&v2.granted(&config))).to_string();
    assert!(
        shown.contains(
            "\n    network:     granted by piton.toml: dictionary.example.com:443 +Authorization\n"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("\n    environment: granted by piton.toml: DICT_LANG\n"),
        "{shown}"
    );
    assert!(
        !shown.contains("s3cret") && !shown.contains("\"en\""),
        "{shown}"
    );
}

#[tokio::test]
async fn a_component_that_does_not_load_has_no_profile_and_the_error_names_it() {
    let error = Profile::of_bytes("downloaded.wasm", b"\0asm junk".to_vec(), runtime())
        .await
        .expect_err("junk has no profile");
    assert!(error.to_string().contains("downloaded.wasm"), "{error}");
    let error = Profile::of_file(guests::HOSTILE_NOT_A_TOOL.as_ref(), runtime())
        .await
        .expect_err("a command is not a tool");
    assert!(
        error.to_string().contains("hostile-not-a-tool.wasm"),
        "{error}"
    );

    let bytes = std::fs::read(guests::LOOKUP_V1).expect("the guest reads");
    let from_bytes = Profile::of_bytes(guests::LOOKUP_V1, bytes, runtime())
        .await
        .expect("the same bytes profile");
    assert_eq!(from_bytes, profile(guests::LOOKUP_V1).await);
}

#[test]
fn piton_check_names_the_capabilities_a_component_could_use() {
    let out = run(piton().args(["check", guests::LOOKUP_V2_NET]));
    let text = stdout(&out);
    assert!(
        text.contains("\ncapabilities its imports could use, if piton.toml grants them: network, environment\n"),
        "{text}"
    );
    let out = run(piton().args(["check", "--json", guests::LOOKUP_V1]));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(json["capabilities"], serde_json::json!(["environment"]));
}
