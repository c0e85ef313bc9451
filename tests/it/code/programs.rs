//! Programs that work: their values, what they print, the tools' own errors as
//! exceptions, and what the model reads about the tool and which tools it may call.

use piton_host::CallError;
use piton_tests::plugins;
use serde_json::json;

use super::{Code, code_toml};

/// word_count, and files with a write mount on the data folder, which holds `a.txt`
/// and `b.txt`.
async fn with_files(more: &str) -> Code {
    let toml = format!(
        "{}[tools.files]\nmounts = [{{ host = \"{{DATA}}\", guest = \"/data\", mode = \"write\" }}]\n",
        code_toml(more)
    );
    let folder_files = [
        ("word_count.wasm", plugins::WORD_COUNT),
        ("files.wasm", plugins::FILES),
    ];
    Code::load_with(&folder_files, &toml, |data| {
        std::fs::write(data.join("a.txt"), "one two three").expect("a.txt");
        std::fs::write(data.join("b.txt"), "four five").expect("b.txt");
    })
    .await
}

#[tokio::test]
async fn a_program_calls_tools_and_its_last_expression_is_the_result() {
    let code = Code::load(&[("word_count.wasm", plugins::WORD_COUNT)], &code_toml("")).await;
    let blocks = code
        .ok("n = word_count(text='a b c')\nprint('counted', n)\n{'n': n, 'twice': n * 2}")
        .await;
    assert_eq!(blocks, [r#"{"n":3,"twice":6}"#, "printed:\ncounted 3\n"]);
    // The seed's rules: a str as is, None as (done), anything else as JSON.
    assert_eq!(code.ok("'a ' + str(word_count(text='x y'))").await, ["a 2"]);
    assert!(
        code.ok("x = word_count(text='x')").await.is_empty(),
        "(done)"
    );
    assert_eq!(
        code.ok("[word_count(text=t) for t in ['a', 'a b']]").await,
        ["[1,2]"]
    );
}

#[tokio::test]
async fn a_tool_s_error_result_is_an_exception_the_program_may_catch() {
    let code = with_files("").await;
    let caught = code
        .ok("try:\n    word_count(text=5)\nexcept ValueError as e:\n    r = str(e)\nr")
        .await;
    assert!(
        caught[0].starts_with("word_count(): (input error: ") && caught[0].contains("string"),
        "{caught:?}"
    );
    let caught = code
        .ok("try:\n    files(op='read', path='/data/none.txt')\nexcept RuntimeError as e:\n    r = str(e)\nr")
        .await;
    assert!(
        caught[0].starts_with("files(): cannot read /data/none.txt"),
        "{caught:?}"
    );
    // Not caught: the run ends with an error result naming the line.
    let failed = code
        .fails("x = 1\nfiles(op='read', path='/data/none.txt')")
        .await;
    assert!(
        failed.starts_with("the program raised an exception it did not catch (line 2):"),
        "{failed}"
    );
    assert!(
        failed.contains("RuntimeError: files(): cannot read /data/none.txt"),
        "{failed}"
    );
}

#[tokio::test]
async fn positional_arguments_bind_in_the_order_of_the_signature() {
    let code = with_files("").await;
    // files(op, path, content): required first, in the schema's order.
    assert_eq!(
        code.ok("files('read', '/data/a.txt')").await,
        ["one two three"]
    );
    let names = code.ok("sorted(files('list', '/data'))").await;
    assert_eq!(names, [r#"["a.txt","b.txt"]"#]);
    let twice = code.fails("files('read', '/data/a.txt', path='/x')").await;
    assert!(
        twice.contains("TypeError: files() got multiple values for argument 'path'"),
        "{twice}"
    );
}

#[tokio::test]
async fn the_description_lists_every_callable_tool_as_a_python_signature() {
    let code = with_files("").await;
    let tool = code
        .registry()
        .get("run_python")
        .expect("run_python is loaded");
    let description = &tool.spec().description;
    assert!(
        description.contains(
            "def word_count(text: str) -> Any:  # read-only. Count the words in a text.\n"
        ),
        "{description}"
    );
    assert!(
        description.contains(
            "def files(op: Literal['list', 'read', 'create', 'delete'], path: str, content: \
             str | None = None) -> Any:  # List, read, create or delete files in the granted \
             folders.\n"
        ),
        "{description}"
    );
    assert!(
        !description.contains("def run_python"),
        "never itself: {description}"
    );
    assert!(
        description.contains("50 tool calls and take 30s"),
        "{description}"
    );
    assert_eq!(tool.spec().input_schema["required"], json!(["code"]));
    // files may delete: so may a run.
    let hints = tool.hints();
    assert!(!hints.is_read_only() && hints.is_destructive() && !hints.is_open_world());
}

#[tokio::test]
async fn tools_and_read_only_only_choose_what_a_program_may_call() {
    for more in ["tools = [\"word_count\"]", "read_only_only = true"] {
        let code = with_files(more).await;
        assert_eq!(code.ok("word_count(text='a b')").await, ["2"], "{more}");
        let refused = code.fails("files(op='delete', path='/data/a.txt')").await;
        assert!(
            refused.contains("NameError: name 'files' is not defined"),
            "{more}: {refused}"
        );
        let tool = code.registry().get("run_python").expect("loaded");
        assert!(!tool.spec().description.contains("def files"), "{more}");
        assert!(
            tool.hints().is_read_only(),
            "{more}: only read-only tools, so read-only"
        );
        assert!(
            code.data.path().join("a.txt").exists(),
            "{more}: nothing deleted"
        );
    }
}

#[tokio::test]
async fn with_only_the_registry_is_served_as_the_one_tool() {
    let code = Code::load(
        &[("word_count.wasm", plugins::WORD_COUNT)],
        &code_toml("only = true\nname = \"py\""),
    )
    .await;
    let listed: Vec<String> = (code.registry().list().await.tools.iter())
        .map(|t| t.spec().name.clone())
        .collect();
    assert_eq!(listed, ["py"]);
    match code
        .registry()
        .call("word_count", json!({"text": "a"}))
        .await
    {
        Err(CallError::UnknownTool { known, .. }) => assert_eq!(known, ["py"]),
        other => panic!("word_count is not served: {other:?}"),
    }
    let counted = code.run_as("py", "word_count(text='a b c d')").await;
    assert_eq!(crate::support::texts(&counted), ["4"]);
}
