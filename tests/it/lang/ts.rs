//! TypeScript tools: type-checked by `tsc` against guest-sdk/js/piton.d.ts and bundled
//! by `esbuild` into the JavaScript build. The example plugins/text-ts (two files,
//! bundled into one) answers through the registry and `piton serve`; each way a call
//! ends; the argument types `tool()` derives from a literal `inputSchema` (a file of
//! `@ts-expect-error` lines type-checks only when each is an error); a function that
//! does not fit its schema fails the build with tsc's message and line; a missing tsc
//! names the npm command.

use std::ffi::OsStr;
use std::path::Path;

use piton_host::grants::Grants;
use piton_host::wasm::LoadFrom;
use piton_host::{Content, Limits, Registry, ToolError};
use serde_json::{Value, json};

use super::{built, toolchains, try_built};
use crate::peers::{
    Target, call_result, listed, listed_names, only_text, piton_bin, repo_root, sdk_client,
};
use crate::support::*;

/// A registry of every tool of the component `wasm`.
async fn registry_of_box(wasm: &Path) -> Registry {
    let mut registry = Registry::new();
    let tools = runtime()
        .load(LoadFrom::File(wasm.into()), None)
        .await
        .unwrap_or_else(|e| panic!("{} loads: {e}", wasm.display()));
    for tool in tools {
        registry
            .add(with_settings(tool, Grants::default(), Limits::default()))
            .expect("no duplicate names");
    }
    registry
}

#[tokio::test]
async fn the_ts_example_builds_from_two_files_and_answers_through_the_registry() {
    let registry = registry_of_box(&built("plugins/text-ts")).await;
    assert_eq!(registry.names(), ["find_words", "title_case"]);
    let title = registry.get("title_case").expect("listed");
    assert_eq!(title.spec().description, "Write a text in title case.");
    assert!(title.hints().is_read_only() && !title.hints().is_open_world());
    assert_eq!(
        call_ok(
            &registry,
            "title_case",
            json!({"text": "the cat in the hat"})
        )
        .await,
        ["The Cat in the Hat"]
    );
    let found = call_ok(
        &registry,
        "find_words",
        json!({"text": "apples and Apricots and pears", "prefix": "ap", "limit": 1}),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&found[0]).expect("JSON"),
        json!({"count": 2, "words": ["apples"]})
    );
    assert_eq!(
        call_error(&registry, "find_words", json!({"text": "x", "prefix": "q"})).await,
        ToolError::Failed("no word starts with q".to_owned())
    );
    let refused = call_error(
        &registry,
        "find_words",
        json!({"text": "x", "prefix": "a", "limit": 0}),
    )
    .await;
    assert!(
        matches!(&refused, ToolError::Input(m) if m.contains("limit")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn each_way_a_ts_call_ends_reaches_the_host() {
    let registry = registry_of_box(&built("tests/lang/ts/outcomes.ts")).await;
    let how = |how: &str| json!({ "how": how });
    assert_eq!(
        call_ok(&registry, "ts_outcome", how("text")).await,
        ["plain text"]
    );
    let listed = call_ok(
        &registry,
        "ts_outcome",
        json!({"how": "json", "list": [1, 2]}),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&listed[0]).expect("JSON"),
        json!({"list": [1, 2], "ok": true})
    );
    let image = registry
        .call("ts_outcome", how("image"))
        .await
        .expect("runs")
        .expect("content");
    assert!(
        matches!(&image[1], Content::Image { mime_type, .. } if mime_type == "image/png"),
        "{image:?}"
    );
    assert_eq!(
        call_error(&registry, "ts_outcome", how("failed")).await,
        ToolError::Failed("the thing failed".to_owned())
    );
    assert_eq!(
        call_error(&registry, "ts_outcome", how("input")).await,
        ToolError::Input("how is input".to_owned())
    );
    let stopped = call_stops(&registry, "ts_outcome", how("bug")).await;
    assert!(
        stopped.contains("TypeError: a bug in the tool"),
        "{stopped}"
    );
    assert_eq!(
        call_ok(&registry, "ts_outcome", how("text")).await,
        ["plain text"]
    );
}

#[test]
fn the_ts_example_answers_an_mcp_client_through_piton_serve() {
    let wasm = built("plugins/text-ts");
    let folder = plugins_folder(&[("text-ts.wasm", wasm.to_str().expect("a UTF-8 path"))]);
    let command = [
        OsStr::new(piton_bin()),
        OsStr::new("serve"),
        OsStr::new("--plugins"),
        folder.path().as_os_str(),
    ];
    let report = sdk_client(
        Target::Stdio(&command),
        "auto",
        &[
            ("title_case", json!({"text": "a tale of two cities"})),
            ("title_case", json!({"text": 3})),
        ],
    );
    assert_eq!(
        listed_names(&report),
        ["find_words", "title_case"],
        "{report:#}"
    );
    assert_eq!(
        listed(&report, "title_case")["annotations"]["readOnlyHint"],
        true
    );
    let titled = call_result(&report, 0);
    assert_eq!(titled["isError"], false, "{titled:#}");
    assert_eq!(only_text(titled), "A Tale of Two Cities");
    let refused = call_result(&report, 1);
    assert_eq!(refused["isError"], true, "{refused:#}");
    assert!(
        only_text(refused).starts_with("(input error: "),
        "{refused:#}"
    );
}

#[test]
fn tool_types_its_arguments_from_a_literal_input_schema() {
    // Builds only when every @ts-expect-error line is an error and the rest are not.
    built("tests/lang/ts/schema_types.ts");
}

#[test]
fn a_function_that_does_not_fit_its_schema_fails_the_build_with_tscs_line() {
    let message = try_built("tests/lang/ts/type_error.ts").expect_err("it does not type-check");
    assert!(
        message.contains("tests/lang/ts/type_error.ts: it does not type-check")
            && message.contains("type_error.ts(6,17): error TS2362"),
        "{message}"
    );
}

#[test]
fn a_missing_tsc_names_the_npm_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let toolchains = piton_host::build::Toolchains {
        tsc: Some(dir.path().join("tsc")),
        ..toolchains()
    };
    let error = piton_host::build::build(
        &repo_root().join("plugins/text-ts"),
        Some(&dir.path().join("out.wasm")),
        &toolchains,
    )
    .expect_err("no tsc there");
    assert!(
        error
            .to_string()
            .contains("install it with: npm install -g typescript@7.0.2 esbuild@0.28.2"),
        "{error}"
    );
}
