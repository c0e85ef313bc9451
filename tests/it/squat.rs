//! A tool name declared by two plugin files. piton.toml's `[tools.NAME]` grants go
//! by name, so whichever file was served under a contested name got them: a toolbox
//! could squat the name of another plugin's tool and read its secrets. Now neither
//! file is served under that name and neither gets the grants, unless
//! `[tools.NAME] from = "FILE.wasm"` says whose the name is; at start, at a reload of
//! `serve`, and in a new `piton call` process alike.

use std::path::Path;

use piton_host::config::{Config, ConfigProblem};
use piton_host::loader::{Loaded, Loader};
use piton_host::name_claims::NotAPluginFile;
use piton_host::plugins::PluginsAt;
use piton_tests::{guests, plugins as examples};
use serde_json::{Value, json};

use crate::mcp_client::StdioPiton;
use crate::support::*;

/// The secret piton.toml grants `read_env`, the victim's tool.
const SECRET: &str = "hunter2-for-read-env";

/// piton.toml granting the victim's `read_env` the secret, plus `extra`.
fn granting(extra: &str) -> String {
    format!("[tools.read_env]\nenv = {{ SECRET = \"{SECRET}\" }}\n{extra}")
}

/// A plugins folder with the victim (`read_env.wasm`, the read-env guest) and the
/// squatter (`a.wasm`, sorting first, a toolbox that also declares `read_env`).
fn victim_and_squatter() -> tempfile::TempDir {
    plugins_folder(&[
        ("a.wasm", guests::TOOLBOX_SQUAT),
        ("read_env.wasm", guests::HOSTILE_READ_ENV),
    ])
}

/// Loads `folder` with its piton.toml, written from `config`.
async fn load(folder: &Path, config: &str) -> Loaded {
    let file = folder.join("piton.toml");
    std::fs::write(&file, config).expect("write piton.toml");
    Loader::new(runtime().clone(), PluginsAt::Folder(folder.into()))
        .with_config_file(file)
        .load()
        .await
        .expect("the folder reads")
}

/// What `name` answered, as text, or why it did not run.
async fn answer(loaded: &Loaded, name: &str) -> String {
    match loaded.registry.call(name, json!({})).await {
        Ok(Ok(content)) => texts(&Ok(content)).join("\n"),
        Ok(Err(error)) => format!("error result: {error}"),
        Err(error) => format!("not run: {error}"),
    }
}

fn errors_of(loaded: &Loaded) -> Vec<String> {
    loaded.errors.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn a_squatted_name_is_served_by_neither_file_and_gets_no_grant() {
    let folder = victim_and_squatter();
    let loaded = load(folder.path(), &granting("")).await;
    let read_env = answer(&loaded, "read_env").await;
    assert!(
        !read_env.contains(SECRET),
        "the squatter got the grant: {read_env}"
    );
    assert!(
        read_env.starts_with("not run: unknown tool `read_env`"),
        "{read_env}"
    );
    // The squatter's own tool still loads, with nothing granted.
    assert_eq!(loaded.registry.names(), ["peek"]);
    let peek = answer(&loaded, "peek").await;
    assert!(peek.contains(r#""env":[]"#), "{peek}");

    let (squatter, victim) = (
        folder.path().join("a.wasm"),
        folder.path().join("read_env.wasm"),
    );
    let errors = errors_of(&loaded);
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (error, this, other) in [
        (&errors[0], &squatter, &victim),
        (&errors[1], &victim, &squatter),
    ] {
        assert!(
            error.starts_with(&format!(
                "{}: tool `read_env` is also declared by {}",
                this.display(),
                other.display()
            )),
            "{error}"
        );
        for says in [
            "neither is served",
            "[tools.read_env]",
            "from = \"FILE.wasm\"",
        ] {
            assert!(error.contains(says), "{says} in {error}");
        }
    }
    assert!(
        loaded.unused_config.is_empty(),
        "{:?}",
        loaded.unused_config
    );
}

#[tokio::test]
async fn from_gives_the_name_and_its_grant_to_one_file_and_refuses_the_other_naming_both() {
    let folder = victim_and_squatter();
    let loaded = load(folder.path(), &granting("from = \"read_env.wasm\"\n")).await;
    let read_env = answer(&loaded, "read_env").await;
    let seen: Value = serde_json::from_str(&read_env).unwrap_or_else(|e| panic!("{e}: {read_env}"));
    assert_eq!(
        seen["env"],
        json!([["SECRET", SECRET]]),
        "the victim runs with its grant"
    );
    assert!(
        seen.get("by").is_none(),
        "the victim, not the squatter: {seen}"
    );
    let victim = folder.path().join("read_env.wasm");
    let served = loaded.registry.get("read_env").expect("served");
    assert_eq!(served.source().to_string(), victim.display().to_string());
    assert_eq!(loaded.registry.names(), ["peek", "read_env"]);
    assert!(!answer(&loaded, "peek").await.contains(SECRET));

    let errors = errors_of(&loaded);
    let squatter = folder.path().join("a.wasm");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = &errors[0];
    assert!(
        error.starts_with(&format!(
            "{}: tool `read_env` is not served",
            squatter.display()
        )),
        "{error}"
    );
    for says in [
        "[tools.read_env] from = \"read_env.wasm\"",
        &victim.display().to_string(),
    ] {
        assert!(error.contains(says), "{says} in {error}");
    }
}

#[tokio::test]
async fn from_naming_a_file_not_there_serves_neither_and_says_so() {
    // A binding outlives its file: with the victim gone, the squatter is not served in
    // its place, and the grant goes nowhere.
    let folder = plugins_folder(&[("a.wasm", guests::TOOLBOX_SQUAT)]);
    let loaded = load(folder.path(), &granting("from = \"gone.wasm\"\n")).await;
    let read_env = answer(&loaded, "read_env").await;
    assert!(read_env.starts_with("not run: unknown tool"), "{read_env}");
    assert_eq!(loaded.registry.names(), ["peek"]);
    let errors = errors_of(&loaded);
    assert_eq!(errors.len(), 1, "{errors:?}");
    for says in [
        "a.wasm: tool `read_env` is not served",
        "[tools.read_env] from = \"gone.wasm\"",
        "has no file gone.wasm",
    ] {
        assert!(errors[0].contains(says), "{says} in {errors:?}");
    }

    // And a binding to a file that gives no such tool.
    let folder = plugins_folder(&[
        ("a.wasm", guests::TOOLBOX_SQUAT),
        ("word_count.wasm", examples::WORD_COUNT),
    ]);
    let loaded = load(folder.path(), &granting("from = \"word_count.wasm\"\n")).await;
    assert_eq!(loaded.registry.names(), ["peek", "word_count"]);
    let errors = errors_of(&loaded);
    assert!(
        errors.len() == 1 && errors[0].contains("word_count.wasm gives no tool named read_env"),
        "{errors:?}"
    );
}

#[test]
fn a_from_that_is_not_a_wasm_file_name_is_a_config_error_naming_the_key() {
    for bad in ["../read_env.wasm", "read_env", "/tmp/read_env.wasm", ""] {
        let text = granting(&format!("from = {bad:?}\n"));
        let error = Config::parse(&text, Path::new("/x/piton.toml"), &|_| None).expect_err(bad);
        assert_eq!(error.key, "tools.read_env.from");
        assert!(
            matches!(&error.problem, ConfigProblem::FromFile(NotAPluginFile(file)) if file == bad),
            "{error:?}"
        );
        let shown = error.to_string();
        assert!(
            shown.starts_with("/x/piton.toml: tools.read_env.from: "),
            "{shown}"
        );
        assert!(shown.contains("ending in .wasm"), "{shown}");
    }
    let error = Config::parse(
        "[tools.read_env]\nfrm = \"a.wasm\"\n",
        Path::new("/x/piton.toml"),
        &|_| None,
    )
    .expect_err("an unknown key");
    assert!(
        matches!(&error.problem, ConfigProblem::Toml(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains("unknown field `frm`"), "{error}");
}

#[tokio::test]
async fn a_rename_onto_a_name_another_tool_has_serves_neither() {
    let folder = plugins_folder(&[
        ("notes.wasm", guests::TOOLBOX_NOTES),
        ("sdk.wasm", guests::TOOLBOX_SDK),
    ]);
    let loaded = load(folder.path(), "[tools.count]\nname = \"words\"\n").await;
    assert_eq!(loaded.registry.names(), ["append", "wipe"]);
    let errors = errors_of(&loaded);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("notes.wasm: tool `words` is also declared by"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("sdk.wasm: tool `words` is also declared by"),
        "{errors:?}"
    );
}

#[test]
fn a_new_piton_call_does_not_run_the_squatter_with_the_grant() {
    let folder = victim_and_squatter();
    std::fs::write(folder.path().join("piton.toml"), granting("")).expect("write piton.toml");
    let out = run(piton()
        .args(["call", "read_env", "--plugins"])
        .arg(folder.path()));
    let (said, err) = (stdout(&out), stderr(&out));
    assert!(!said.contains(SECRET), "{said}");
    assert_eq!(out.status.code(), Some(2), "{said}{err}");
    assert!(err.contains("unknown tool `read_env`"), "{err}");
    assert!(
        err.contains("a.wasm: tool `read_env` is also declared by"),
        "{err}"
    );
}

/// The JSON `read_env` answered over MCP, or the error.
fn call_read_env(piton: &mut StdioPiton, id: u64) -> Value {
    let answer = piton.request(
        id,
        "tools/call",
        json!({"name": "read_env", "arguments": {}}),
    );
    match answer["result"]["content"][0]["text"].as_str() {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}")),
        None => answer,
    }
}

#[test]
fn a_squatter_appearing_at_a_reload_gets_no_grant_and_from_gives_the_name_back() {
    let folder = plugins_folder(&[("read_env.wasm", guests::HOSTILE_READ_ENV)]);
    let config = folder.path().join("piton.toml");
    std::fs::write(&config, granting("")).expect("write piton.toml");
    let mut piton = StdioPiton::start(folder.path());
    assert_eq!(piton.tools(1), ["read_env"]);
    assert_eq!(
        call_read_env(&mut piton, 2)["env"],
        json!([["SECRET", SECRET]])
    );

    // The squatter arrives (sorting first): the name is contested, so neither file is
    // served under it, and the victim's tool is not kept with its grant either.
    // Whole at once: a reload never sees half a file.
    let part = folder.path().join("a.part");
    std::fs::copy(guests::TOOLBOX_SQUAT, &part).expect("copy");
    std::fs::rename(&part, folder.path().join("a.wasm")).expect("rename");
    piton.list_changed();
    let seen = call_read_env(&mut piton, 3);
    assert!(
        !seen.to_string().contains(SECRET),
        "the squatter got the grant: {seen}"
    );
    assert!(
        seen["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{seen}"
    );
    assert_eq!(piton.tools(4), ["peek"]);
    let line = piton.running.stderr.wait_for("is also declared by");
    assert!(
        line.contains("read_env.wasm") && line.contains("a.wasm"),
        "{line}"
    );

    // The user says whose the name is: the victim is served again, with its grant.
    std::fs::write(&config, granting("from = \"read_env.wasm\"\n")).expect("write piton.toml");
    piton.list_changed();
    assert_eq!(piton.tools(5), ["peek", "read_env"]);
    let seen = call_read_env(&mut piton, 6);
    assert_eq!(seen["env"], json!([["SECRET", SECRET]]), "{seen}");
    assert!(seen.get("by").is_none(), "{seen}");
    drop(piton.stdin.take());
    assert_eq!(piton.running.exit_code(), Some(0));
}
