//! The worked example of docs/code-mode.md and the README: count the words of every
//! note in a folder and return the three longest, with the bundled tools. Made once
//! with direct calls, as a model makes them (list the folder, read each note, count
//! each), and once as one `run_python` call; the bytes the model reads each way,
//! the tool definitions it is given and every result, are measured here, and the
//! figures the docs state are checked against them.

use piton_host::{DynTool, Registry};
use piton_tests::plugins;
use serde_json::{Value, json};

use super::{Code, code_toml};
use crate::peers::repo_root;

/// The notes: 20 of them, of 40 to 420 words, in an order that is not their length.
fn notes() -> Vec<(String, String)> {
    let words = [
        "piton", "runs", "each", "tool", "in", "a", "fresh", "sandbox",
    ];
    (0..20)
        .map(|i| {
            let n = 40 + (i * 7 % 20) * 20;
            let text: Vec<&str> = (0..n).map(|w| words[(w + i) % words.len()]).collect();
            (format!("note-{i:02}.txt"), text.join(" "))
        })
        .collect()
}

/// The program the model writes for the one `run_python` call.
const PROGRAM: &str = "\
counts = {}
for name in files(op='list', path='/notes'):
    counts[name] = word_count(text=files(op='read', path='/notes/' + name))
top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
[{'note': n, 'words': c} for n, c in top]";

/// A tool as tools/list gives it to the model: name, description, input schema and
/// its four hints, in JSON.
fn definition(tool: &DynTool) -> String {
    let spec = tool.spec();
    let hints = tool.hints();
    json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "readOnlyHint": hints.is_read_only(),
            "destructiveHint": hints.is_destructive(),
            "idempotentHint": hints.is_idempotent(),
            "openWorldHint": hints.is_open_world(),
        },
    })
    .to_string()
}

/// What the model reads of the registry's tools/list.
async fn definitions(registry: &Registry) -> usize {
    registry
        .list()
        .await
        .tools
        .iter()
        .map(|t| definition(t).len())
        .sum()
}

/// Calls `name` and counts the bytes of the result the model reads.
async fn call(registry: &Registry, name: &str, args: Value, read: &mut usize) -> Value {
    let content = crate::support::call_ok(registry, name, args).await;
    *read += content.iter().map(String::len).sum::<usize>();
    let text = content.join("\n");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// The bundled tools, files granted the notes folder.
async fn bundled(more: &str) -> Code {
    let toml = format!(
        "{}[tools.files]\nmounts = [{{ host = \"{{DATA}}\", guest = \"/notes\", mode = \"read\" }}]\n",
        code_toml(more)
    );
    let tools = [
        ("checkerboard.wasm", plugins::CHECKERBOARD),
        ("fetch_url.wasm", plugins::FETCH_URL),
        ("files.wasm", plugins::FILES),
        ("read_file.wasm", plugins::READ_FILE),
        ("word_count.wasm", plugins::WORD_COUNT),
    ];
    Code::load_with(&tools, &toml, |data| {
        for (name, text) in notes() {
            std::fs::write(data.join(name), text).expect("a note");
        }
    })
    .await
}

/// The three longest notes, as the answer both ways must be.
fn expected() -> Value {
    let mut counted: Vec<(String, usize)> = notes()
        .into_iter()
        .map(|(name, text)| (name, text.split_whitespace().count()))
        .collect();
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Value::Array(
        counted[..3]
            .iter()
            .map(|(note, words)| json!({"note": note, "words": words}))
            .collect(),
    )
}

#[tokio::test]
async fn the_scenario_reads_far_fewer_bytes_as_one_program_and_the_docs_say_how_many() {
    // Direct calls: every tool is defined for the model, and every result read.
    let direct = bundled("").await;
    let registry = direct.registry();
    let mut read = definitions(registry).await;
    // run_python is not among them when the model calls the tools directly.
    read -= definition(registry.get("run_python").expect("loaded")).len();
    let mut calls = 1;
    let names = call(
        registry,
        "files",
        json!({"op": "list", "path": "/notes"}),
        &mut read,
    )
    .await;
    let mut counted = Vec::new();
    for name in names.as_array().expect("a list of names") {
        let name = name.as_str().expect("a name");
        let path = format!("/notes/{name}");
        let text = call(
            registry,
            "files",
            json!({"op": "read", "path": path}),
            &mut read,
        )
        .await;
        let words = call(registry, "word_count", json!({"text": text}), &mut read).await;
        calls += 2;
        counted.push((name.to_owned(), words.as_u64().expect("a count")));
    }
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let direct_answer: Vec<Value> = (counted[..3].iter())
        .map(|(note, words)| json!({"note": note, "words": words}))
        .collect();
    assert_eq!(Value::Array(direct_answer), expected());

    // One program: the registry served as run_python alone.
    let code = bundled("only = true").await;
    let mut one = definitions(code.registry()).await;
    let answer = call(
        code.registry(),
        "run_python",
        json!({ "code": PROGRAM }),
        &mut one,
    )
    .await;
    assert_eq!(answer, expected());

    let ratio = read as f64 / one as f64;
    assert!(ratio > 3.0, "{read} against {one} bytes");
    let said = format!(
        "the model reads {read} bytes with direct calls (5 tool definitions and {calls} \
         results) and {one} bytes with one `run_python` call (its definition and its \
         result): {ratio:.1} times less"
    );
    println!("{said}");
    for doc in ["README.md", "docs/code-mode.md"] {
        let text = std::fs::read_to_string(repo_root().join(doc)).expect("the doc reads");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&said),
            "{doc} does not state this run's figures; it should say: {said}"
        );
    }
}
