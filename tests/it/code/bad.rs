//! The bad programs a model may write, each contained: the run ends with an error
//! result that says why and names the line, the host goes on, and nothing the
//! program does reaches past its tools.

use std::time::{Duration, Instant};

use piton_host::CallContext;
use piton_tests::{guests, plugins};
use serde_json::json;

use super::{Code, code_toml};
use crate::observe::{metric, records};
use crate::support::{assert_host_alive, texts};

async fn word_count(more: &str) -> Code {
    Code::load(
        &[("word_count.wasm", plugins::WORD_COUNT)],
        &code_toml(more),
    )
    .await
}

#[tokio::test]
async fn an_endless_loop_ends_at_the_deadline_naming_its_line() {
    let code = word_count("deadline = \"1s\"\nmax_calls = 1000000").await;
    let started = Instant::now();
    let failed = code.fails("x = 0\nwhile True:\n    x += 1\n").await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "stopped: {failed}"
    );
    // A loop that calls nothing meets Monty 0.0.23's time limit at the run loop's
    // periodic checkpoint, whose error leaves the loop without the frame every other
    // error gets (VM::run's `dispatch_checkpoint(..)?`, not `handle_exception`), and
    // the VM is gone when the guest sees it: this one alone cannot name its line.
    assert!(
        failed.starts_with("the program reached a limit of its run"),
        "{failed}"
    );
    assert!(
        failed.contains("TimeoutError: time limit exceeded"),
        "{failed}"
    );
    // Between tool calls, too: the deadline is the whole run's, calls included.
    let failed = code
        .fails("n = 0\nwhile True:\n    n += word_count(text='a b')\n")
        .await;
    assert!(failed.contains("(line 3)"), "{failed}");
    assert!(
        failed.contains("deadline") || failed.contains("time limit"),
        "{failed}"
    );
    assert_eq!(code.ok("1 + 1").await, ["2"], "the next run works");
}

#[tokio::test]
async fn deep_recursion_is_a_recursion_error_naming_its_line() {
    let code = word_count("").await;
    let failed = code.fails("def f(n):\n    return f(n + 1)\nf(0)\n").await;
    assert!(
        failed.starts_with("the program reached a limit of its run (line 2)"),
        "{failed}"
    );
    assert!(
        failed.contains("RecursionError: maximum recursion depth exceeded"),
        "{failed}"
    );
    // Caught, it is an exception like any other.
    let caught = code
        .ok("def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept RecursionError:\n    r = 'deep'\nr")
        .await;
    assert_eq!(caught, ["deep"]);
}

#[tokio::test]
async fn a_memory_bomb_hits_the_interpreter_s_limit_and_the_host_goes_on() {
    let code = word_count("memory = \"64MiB\"").await;
    for bomb in [
        "x = 'a' * (1 << 30)",
        "l = []\nwhile True:\n    l.append('x' * 10000)",
        "d = {}\ni = 0\nwhile True:\n    d[i] = [i] * 1000\n    i += 1",
    ] {
        let failed = code.fails(bomb).await;
        assert!(
            failed.contains("MemoryError") || failed.contains("ran out of memory"),
            "{bomb}: {failed}"
        );
    }
    assert_eq!(code.ok("len('a' * 1000)").await, ["1000"]);
    assert_host_alive().await;
}

#[tokio::test]
async fn what_is_outside_the_subset_says_what_is_not_available() {
    let code = word_count("").await;
    let cases = [
        (
            "import os\nos.getenv('HOME')",
            "PermissionError: os.getenv() is not available in code mode",
        ),
        (
            "open('/etc/passwd').read()",
            "PermissionError: open() is not available in code mode",
        ),
        (
            "from pathlib import Path\nPath('/etc/passwd').read_text()",
            "PermissionError: Path.read_text() is not available in code mode",
        ),
        (
            "import socket",
            "ModuleNotFoundError: No module named 'socket'",
        ),
        (
            "import subprocess",
            "ModuleNotFoundError: No module named 'subprocess'",
        ),
        (
            "import time\ntime.sleep(1)",
            "ModuleNotFoundError: No module named 'time'",
        ),
    ];
    for (program, says) in cases {
        let failed = code.fails(program).await;
        assert!(failed.contains(says), "{program}: {failed}");
        assert!(failed.contains("(line "), "{program}: {failed}");
    }
}

#[tokio::test]
async fn a_syntax_error_names_its_line() {
    let code = word_count("").await;
    let failed = code.fails("x = 1\nif x\n    y = 2\n").await;
    assert!(
        failed.starts_with("the program does not parse (line 2):"),
        "{failed}"
    );
    assert!(failed.contains("SyntaxError"), "{failed}");
}

#[tokio::test]
async fn a_tool_that_does_not_exist_or_is_not_allowed_is_an_error_not_a_crash() {
    let code = Code::load(
        &[
            ("word_count.wasm", plugins::WORD_COUNT),
            ("panic.wasm", guests::HOSTILE_PANIC),
        ],
        &code_toml("tools = [\"word_count\"]"),
    )
    .await;
    for program in ["no_such_tool(1)", "panic()", "run_python(code='1')"] {
        let failed = code.fails(program).await;
        assert!(failed.contains("NameError: name '"), "{program}: {failed}");
        assert!(failed.contains("(line 1)"), "{program}: {failed}");
    }
}

#[tokio::test]
async fn a_tool_s_trap_ends_the_run_at_the_call() {
    let code = Code::load(
        &[
            ("word_count.wasm", plugins::WORD_COUNT),
            ("panic.wasm", guests::HOSTILE_PANIC),
        ],
        &code_toml(""),
    )
    .await;
    let failed = code
        .fails("n = word_count(text='a')\ntry:\n    panic()\nexcept Exception:\n    n = -1\nn")
        .await;
    assert!(
        failed.starts_with("the program's run ended at a tool call (line 3)"),
        "{failed}"
    );
    assert!(failed.contains("trapped"), "{failed}");
}

#[tokio::test]
async fn the_budget_of_calls_ends_the_run_and_cannot_be_caught() {
    let code = word_count("max_calls = 3").await;
    let failed = code
        .fails("for i in range(5):\n    try:\n        word_count(text='a')\n    except Exception:\n        pass\n")
        .await;
    assert!(
        failed.starts_with("the program reached a limit of its run (line 3)"),
        "{failed}"
    );
    assert!(
        failed.contains("budget of 3 tool calls is used up"),
        "{failed}"
    );
}

#[tokio::test]
async fn ten_thousand_calls_in_a_loop_stop_at_the_budget() {
    let code = word_count("").await;
    let started = Instant::now();
    let failed = code
        .fails("total = 0\nfor i in range(10000):\n    total += word_count(text='a b')\ntotal")
        .await;
    assert!(
        failed.contains("budget of 50 tool calls is used up"),
        "{failed}"
    );
    assert!(failed.contains("(line 3)"), "{failed}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "within the deadline"
    );
}

/// With a budget that allows them, 10 000 nested calls in one run all run, each in
/// a fresh word_count instance, audited and counted, in an interpreter given the least
/// memory code mode allows (32 MiB): nothing of a call stays behind in the run.
#[tokio::test]
async fn ten_thousand_nested_calls_run_in_one_run_when_the_budget_allows() {
    const CALLS: usize = 10_000;
    let toml = format!(
        "{}[audit]\nto = \"{{DATA}}/audit.log\"\n",
        code_toml("max_calls = 10000\ndeadline = \"10m\"\nmemory = \"32MiB\"")
    );
    let code = Code::load_with(&[("word_count.wasm", plugins::WORD_COUNT)], &toml, |_| {}).await;
    let run = CallContext::new();
    let program = "total = 0\nfor i in range(10000):\n    total += word_count(text='a b')\ntotal";
    let answer = code
        .registry()
        .call_with(&run, "run_python", json!({ "code": program }))
        .await;
    assert_eq!(texts(&answer.expect("no trap")), ["20000"]);
    let observer = code.loader.observer().expect("an observer");
    observer.flush();
    let records = records(&code.data.path().join("audit.log"), CALLS + 1);
    let made_by = json!({"tool": "run_python", "run": run.id().get()});
    let nested = records
        .iter()
        .filter(|r| r["tool"] == "word_count" && r["made_by"] == made_by && r["outcome"] == "ok")
        .count();
    assert_eq!(nested, CALLS);
    let counted = metric(
        &observer.metrics_text(),
        "piton_tool_calls_total",
        &[("tool", "word_count")],
    );
    assert_eq!(counted, Some(CALLS as f64));
    assert_host_alive().await;
}

#[tokio::test]
async fn a_program_cannot_reach_a_tool_s_grants() {
    let toml = format!(
        "{}[tools.read_file]\nmounts = [{{ host = \"{{DATA}}\", guest = \"/data\", mode = \"read\" }}]\n",
        code_toml("")
    );
    let code = Code::load_with(&[("read_file.wasm", plugins::READ_FILE)], &toml, |data| {
        std::fs::write(data.join("secret.txt"), "the tool may read this").expect("write");
    })
    .await;
    // Through its tool, under the tool's own grant: yes.
    assert_eq!(
        code.ok("read_file(path='/data/secret.txt')").await,
        ["the tool may read this"]
    );
    // The program itself has no files at all.
    for program in [
        "open('/data/secret.txt').read()",
        "from pathlib import Path\nPath('/data/secret.txt').read_text()",
    ] {
        let failed = code.fails(program).await;
        assert!(
            failed.contains("is not available in code mode"),
            "{program}: {failed}"
        );
    }
    // And the tool gets no more than its grant when a program calls it.
    let outside = code
        .ok("try:\n    r = read_file(path='/etc/passwd')\nexcept RuntimeError as e:\n    r = 'refused: ' + str(e)\nr")
        .await;
    assert!(outside[0].starts_with("refused: "), "{outside:?}");
    assert!(!outside[0].contains("root:"), "{outside:?}");
}

#[tokio::test]
async fn huge_printed_output_is_cut_and_counted() {
    let code = word_count("max_printed = \"1KiB\"").await;
    let blocks = code
        .ok("for i in range(100000):\n    print('x' * 99)\n'done'")
        .await;
    assert_eq!(blocks[0], "done");
    let printed = &blocks[1];
    assert!(printed.len() < 2048, "{} bytes", printed.len());
    assert!(
        printed.ends_with(&format!(
            "[{} more bytes printed, left out: [code] max_printed]",
            100_000 * 100 - 1024
        )),
        "{}",
        &printed[printed.len() - 100..]
    );
}

#[tokio::test]
async fn a_result_that_cannot_be_json_is_an_error_saying_why() {
    let code = word_count("").await;
    for (program, says) in [
        ("{1, 2}", "an object of type set is not JSON serializable"),
        ("b'x'", "bytes"),
        ("float('nan')", "is not a JSON number"),
        ("l = []\nl.append(l)\nl", "contains itself"),
        ("{(1, 2): 3}", "keys must be str"),
    ] {
        let failed = code.fails(program).await;
        assert!(
            failed.starts_with("the program's value cannot be given as JSON:"),
            "{program}: {failed}"
        );
        assert!(failed.contains(says), "{program}: {failed}");
    }
}
