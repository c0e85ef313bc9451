//! Links a tool could plant, followed by a later load: a mount's path (a nested mount
//! swapped for a link, then a restart or a reload) and a plugin (a symbolic or hard
//! link in the plugins folder to a file a tool may write).

use std::path::{Path, PathBuf};
use std::process::Output;

use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::mcp_client::StdioPiton;
use crate::support::{piton, run, stderr, stdout};

/// A temporary folder, canonical.
fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().canonicalize().expect("temp dir");
    (dir, path)
}

fn mount(host: &str, guest: &str, mode: &str) -> String {
    format!("{{ host = {host:?}, guest = {guest:?}, mode = {mode:?} }}")
}

/// `root/plugins` with fs_write (granted "write" on `root/data/w` as `/w`), and
/// read_file and files granted `root/data/w/sub` as `/sub` ("read" and "write");
/// `root/data/outside/secret.txt` lies beside `w`. The plugins folder.
fn nested_mounts(root: &Path) -> PathBuf {
    let plugins = root.join("plugins");
    let data = root.join("data");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    std::fs::create_dir_all(data.join("w/sub")).expect("mkdir");
    std::fs::create_dir_all(data.join("outside")).expect("mkdir");
    std::fs::write(data.join("w/sub/inner.txt"), "inner").expect("write");
    std::fs::write(data.join("outside/secret.txt"), "secret outside").expect("write");
    for (name, wasm) in [
        ("fs_write.wasm", guests::HOSTILE_FS_WRITE),
        ("read_file.wasm", plugins::READ_FILE),
        ("files.wasm", plugins::FILES),
    ] {
        std::fs::copy(wasm, plugins.join(name)).expect("copy");
    }
    let config = format!(
        "[tools.fs_write]\nmounts = [{}]\n[tools.read_file]\nmounts = [{}]\n[tools.files]\nmounts = [{}]\n",
        mount("../data/w", "/w", "write"),
        mount("../data/w/sub", "/sub", "read"),
        mount("../data/w/sub", "/sub", "write"),
    );
    std::fs::write(plugins.join("piton.toml"), config).expect("write");
    plugins
}

/// What fs_write's `swap` asks: `/w/sub` moved aside and made a link to `../outside`.
fn swap() -> Value {
    json!({"mode": "write", "op": "swap", "path": "/w/sub", "target": "../outside"})
}

/// `piton call NAME ARGS --plugins plugins`.
fn call(plugins: &Path, name: &str, args: &Value) -> Output {
    run(piton()
        .args(["call", name, &args.to_string(), "--plugins"])
        .arg(plugins))
}

/// The tool was refused at load with an error naming its mount, the link and the fix.
fn assert_refused_for_the_link(said: &str, tool: &str, link: &Path) {
    let line = said
        .lines()
        .find(|line| line.contains(&format!("[tools.{tool}]")))
        .unwrap_or_else(|| panic!("no refusal of {tool}:\n{said}"));
    assert!(line.contains("mounts[0]"), "{line}");
    assert!(line.contains(&link.display().to_string()), "{line}");
    assert!(line.contains("symbolic link"), "{line}");
    assert!(
        line.contains("point the grant at the real folder"),
        "{line}"
    );
}

/// A destructive tool that may write `w` swaps `w/sub` for a link to `../outside`;
/// a new `piton call` must not give the tools granted `w/sub` (read or write) the
/// folder `outside`.
#[cfg(unix)]
#[test]
fn a_nested_mount_swapped_for_a_link_is_refused_at_the_next_start() {
    let (_root, root) = folder();
    let plugins = nested_mounts(&root);
    let read = json!({"path": "/sub/inner.txt"});
    let out = call(&plugins, "read_file", &read);
    assert_eq!(stdout(&out), "inner\n", "{}", stderr(&out));

    let out = call(&plugins, "fs_write", &swap());
    assert_eq!(stdout(&out), "ok\n", "{}", stderr(&out));
    let link = root.join("data/w/sub");
    assert!(std::fs::symlink_metadata(&link).expect("link").is_symlink());

    // Read: the secret beside `w` is not read.
    let out = call(&plugins, "read_file", &json!({"path": "/sub/secret.txt"}));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!said.contains("secret outside"), "read outside: {said}");
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert_refused_for_the_link(&said, "read_file", &link);

    // Write: nothing is created beside `w`.
    let args = json!({"op": "create", "path": "/sub/planted.txt", "content": "planted"});
    let out = call(&plugins, "files", &args);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        !root.join("data/outside/planted.txt").exists(),
        "wrote outside: {said}"
    );
    assert_refused_for_the_link(&said, "files", &link);

    // The other tools still load.
    let args = json!({"mode": "add", "op": "write", "path": "/w/new.txt", "content": "x"});
    let out = call(&plugins, "fs_write", &args);
    assert_eq!(stdout(&out), "ok\n", "{}", stderr(&out));
}

/// The same swap while `piton serve` runs, then a reload (piton.toml touched): the
/// tools granted `w/sub` are no longer served, and a call of them reaches nothing.
#[cfg(unix)]
#[test]
fn a_nested_mount_swapped_for_a_link_is_refused_at_a_reload() {
    let (_root, root) = folder();
    let plugins = nested_mounts(&root);
    let mut command = piton();
    command
        .env("PITON_LOG", "info")
        .args(["serve", "--approve", "never", "--plugins"])
        .arg(&plugins);
    let mut piton = StdioPiton::run(command);
    assert_eq!(piton.tools(1), ["files", "fs_write", "read_file"]);
    let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});

    let answer = piton.request(2, "tools/call", call("fs_write", swap()));
    assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
    // piton.toml written anew, whole (a rename, so no reload reads half of it).
    let config = plugins.join("piton.toml");
    let text = std::fs::read_to_string(&config).expect("read");
    let new = root.join("piton.toml.new");
    std::fs::write(&new, format!("{text}\n")).expect("write");
    std::fs::rename(&new, &config).expect("touch piton.toml");
    piton.running.stderr.wait_for("reloaded the plugins");
    // Sent once the new registry is served.
    piton.list_changed();

    let answer = piton.request(
        3,
        "tools/call",
        call("read_file", json!({"path": "/sub/secret.txt"})),
    );
    assert!(
        !answer.to_string().contains("secret outside"),
        "read outside after the reload: {answer}"
    );
    let args = json!({"op": "create", "path": "/sub/planted.txt", "content": "planted"});
    let answer = piton.request(4, "tools/call", call("files", args));
    assert!(
        !root.join("data/outside/planted.txt").exists(),
        "wrote outside after the reload: {answer}"
    );
    let tools = piton.tools(5);
    let said = piton.running.stderr.text();
    assert_eq!(tools, ["fs_write"], "{said}");
    let link = root.join("data/w/sub");
    assert_refused_for_the_link(&said, "read_file", &link);
    assert_refused_for_the_link(&said, "files", &link);
    drop(piton.stdin.take());
    assert_eq!(piton.running.exit_code(), Some(0));
}

/// `piton list --plugins plugins`: the tool names, and everything said.
fn list(plugins: &Path) -> (Vec<String>, String) {
    let out = run(piton().args(["list", "--json", "--plugins"]).arg(plugins));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let mut names: Vec<String> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    (names, said)
}

/// A plugin reached through a symbolic link, and one with a second (hard) name, both
/// in the folder fs_write may write: fs_write copies other components over them, and
/// the next start must not serve what it wrote. Both are refused from the start,
/// naming the file and the fix; fs_write itself still loads.
#[cfg(unix)]
#[test]
fn a_plugin_linked_from_a_folder_a_tool_may_write_is_refused() {
    let (_root, root) = folder();
    let plugins = root.join("plugins");
    let w = root.join("w");
    let stash = root.join("stash");
    for dir in [&plugins, &w, &stash] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::copy(guests::HOSTILE_FS_WRITE, plugins.join("fs_write.wasm")).expect("copy");
    std::fs::copy(plugins::WORD_COUNT, w.join("word_count.wasm")).expect("copy");
    std::os::unix::fs::symlink("../w/word_count.wasm", plugins.join("linked.wasm"))
        .expect("symlink");
    std::fs::copy(guests::HOSTILE_COUNTER, w.join("counter.wasm")).expect("copy");
    std::fs::hard_link(w.join("counter.wasm"), plugins.join("hard.wasm")).expect("hard link");
    std::fs::copy(plugins::READ_FILE, stash.join("read_file.wasm")).expect("copy");
    std::fs::copy(plugins::FILES, stash.join("files.wasm")).expect("copy");
    std::fs::write(
        plugins.join("piton.toml"),
        format!(
            "[tools.fs_write]\nmounts = [{}, {}]\n",
            mount("../w", "/w", "write"),
            mount("../stash", "/stash", "read")
        ),
    )
    .expect("write");

    let (names, said) = list(&plugins);
    assert_eq!(names, ["fs_write"], "{said}");
    for file in ["linked.wasm", "hard.wasm"] {
        let line = said
            .lines()
            .find(|line| line.contains(&plugins.join(file).display().to_string()))
            .unwrap_or_else(|| panic!("no refusal of {file}:\n{said}"));
        assert!(
            line.contains("copy the file into the plugins folder"),
            "{line}"
        );
    }
    let line = said
        .lines()
        .find(|l| l.contains("linked.wasm"))
        .unwrap_or("");
    assert!(line.contains(&w.display().to_string()), "{line}");
    assert!(line.contains("[tools.fs_write]"), "{line}");
    let line = said.lines().find(|l| l.contains("hard.wasm")).unwrap_or("");
    assert!(line.contains("2 hard links"), "{line}");

    // The attack: the tool writes other code through the other names.
    for (from, to) in [("read_file", "word_count"), ("files", "counter")] {
        let args = json!({"mode": "write", "op": "copy",
            "from": format!("/stash/{from}.wasm"), "path": format!("/w/{to}.wasm")});
        let out = call(&plugins, "fs_write", &args);
        assert!(
            stdout(&out).starts_with("ok "),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    let (names, said) = list(&plugins);
    assert_eq!(names, ["fs_write"], "served code a tool wrote: {said}");
}
