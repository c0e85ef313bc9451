//! No call may change what piton loads or trusts: the plugins folder, the config
//! files on the lookup path and the compile cache. A tool granted "write" on any of
//! them, or on a folder holding one, is refused at load; each case runs `piton
//! serve`, tries the write a reload would pick up, and checks nothing was written.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use piton_host::protected::ProtectedError;
use piton_tests::{guests, plugins};
use serde_json::{Value, json};

use crate::support::piton;

const ANSWER: Duration = Duration::from_secs(60);

/// Longer than a few of `serve`'s polls of the plugins folder (every 500 ms).
const RELOAD: Duration = Duration::from_millis(2500);

/// `piton serve` on stdio, with its stderr kept.
struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Serve {
    /// Starts `piton serve --plugins plugins` in `cwd` with `env`.
    fn start(cwd: &Path, plugins: &Path, env: &[(&str, &Path)]) -> Self {
        let mut command = piton();
        command
            .current_dir(cwd)
            .env_remove("PITON_CONFIG")
            .args(["serve", "--approve", "never", "--plugins"])
            .arg(plugins)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("piton serve starts");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        let (send, stdout) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let Ok(message) = serde_json::from_str(&line) else {
                    break;
                };
                if send.send(message).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                sink.lock().expect("lock").push_str(&format!("{line}\n"));
            }
        });
        let mut serve = Self {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 0,
        };
        let answer = serve.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "piton-tests", "version": "0"}}),
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "piton", "{answer}");
        serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request and returns its answer (notifications are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self
                .stdout
                .recv_timeout(ANSWER)
                .unwrap_or_else(|e| panic!("no answer ({e}); stderr:\n{}", self.stderr()));
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    fn tools(&mut self) -> Vec<String> {
        let answer = self.request("tools/list", json!({}));
        let mut names: Vec<String> = answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {answer}"))
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary folder, canonical (macOS's /tmp is a link).
fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().canonicalize().expect("temp dir");
    (dir, path)
}

/// A plugins folder with the hostile writer and word_count.
fn plugins_with_writer() -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = folder();
    std::fs::copy(guests::HOSTILE_FS_WRITE, path.join("fs_write.wasm")).expect("copy");
    std::fs::copy(plugins::WORD_COUNT, path.join("word_count.wasm")).expect("copy");
    (dir, path)
}

/// piton.toml granting fs_write `mounts` (TOML inline tables).
fn config(mounts: &[String]) -> String {
    format!("[tools.fs_write]\nmounts = [{}]\n", mounts.join(", "))
}

fn write_mount(host: &Path, guest: &str) -> String {
    format!(
        "{{ host = {:?}, guest = {guest:?}, mode = \"write\" }}",
        host.display().to_string()
    )
}

fn read_mount(host: &Path, guest: &str) -> String {
    format!(
        "{{ host = {:?}, guest = {guest:?}, mode = \"read\" }}",
        host.display().to_string()
    )
}

/// The tool was refused at load with a message naming it, the mount, the protected
/// path and the fix; the tools served are the others.
fn assert_refused_at_load(serve: &mut Serve, mount: &Path, protected: &Path) {
    let stderr = serve.stderr();
    let line = stderr
        .lines()
        .find(|line| line.contains("fs_write") && line.contains("protects"))
        .unwrap_or_else(|| panic!("no refusal of fs_write on stderr:\n{stderr}"));
    assert!(line.contains(&mount.display().to_string()), "{line}");
    assert!(line.contains(&protected.display().to_string()), "{line}");
    assert!(line.contains("mode = \"read\""), "the fix: {line}");
    assert_eq!(serve.tools(), ["word_count"], "{stderr}");
}

/// Calls fs_write, waits for any reload, and returns the answer.
fn attack(serve: &mut Serve, arguments: Value) -> Value {
    let answer = serve.call("fs_write", arguments);
    std::thread::sleep(RELOAD);
    answer
}

/// Add-only: a tool that may write a folder holding the plugins folder creates
/// `plugins/piton.toml`, which the lookup path prefers to `./piton.toml`.
#[test]
fn an_add_only_tool_cannot_create_piton_toml_beside_the_plugins() {
    let (_cwd, cwd) = folder();
    let (_root, root) = folder();
    let plugins = root.join("plugins");
    std::fs::create_dir(&plugins).expect("mkdir");
    std::fs::copy(guests::HOSTILE_FS_WRITE, plugins.join("fs_write.wasm")).expect("copy");
    std::fs::copy(plugins::WORD_COUNT, plugins.join("word_count.wasm")).expect("copy");
    std::fs::write(
        cwd.join("piton.toml"),
        config(&[write_mount(&root, "/data")]),
    )
    .expect("write");

    let mut serve = Serve::start(&cwd, &plugins, &[]);
    let planted = config(&[write_mount(Path::new("/"), "/host")]);
    let answer = attack(
        &mut serve,
        json!({"mode": "add", "op": "write", "path": "/data/plugins/piton.toml", "content": planted}),
    );
    assert!(
        !plugins.join("piton.toml").exists(),
        "the guest created plugins/piton.toml: {answer}"
    );
    assert_refused_at_load(&mut serve, &root, &plugins);
}

/// Destructive: a tool that may write the folder piton runs in overwrites
/// `./piton.toml`.
#[test]
fn a_destructive_tool_cannot_overwrite_the_config_file() {
    let (_cwd, cwd) = folder();
    let (_plugins, plugins) = plugins_with_writer();
    let text = config(&[write_mount(&cwd, "/data")]);
    std::fs::write(cwd.join("piton.toml"), &text).expect("write");

    let mut serve = Serve::start(&cwd, &plugins, &[]);
    let planted = config(&[write_mount(Path::new("/"), "/host")]);
    let answer = attack(
        &mut serve,
        json!({"mode": "write", "op": "write", "path": "/data/piton.toml", "content": planted}),
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("piton.toml")).expect("read"),
        text,
        "the guest rewrote piton.toml: {answer}"
    );
    assert_refused_at_load(&mut serve, &cwd, &cwd.join("piton.toml"));
}

/// A new `.wasm` in the plugins folder is loaded at the next reload.
#[test]
fn a_tool_cannot_drop_a_new_plugin_into_the_plugins_folder() {
    let (_cwd, cwd) = folder();
    let (_plugins, plugins) = plugins_with_writer();
    let (_stash, stash) = folder();
    std::fs::copy(plugins::READ_FILE, stash.join("read_file.wasm")).expect("copy");
    std::fs::write(
        cwd.join("piton.toml"),
        config(&[write_mount(&plugins, "/data"), read_mount(&stash, "/stash")]),
    )
    .expect("write");

    let mut serve = Serve::start(&cwd, &plugins, &[]);
    let answer = attack(
        &mut serve,
        json!({"mode": "add", "op": "copy", "from": "/stash/read_file.wasm",
            "path": "/data/read_file.wasm"}),
    );
    assert!(
        !plugins.join("read_file.wasm").exists(),
        "the guest dropped a plugin: {answer}"
    );
    assert_refused_at_load(&mut serve, &plugins, &plugins);
}

/// Whoever writes the compile cache runs native code as piton.
#[test]
fn a_tool_cannot_write_into_the_compile_cache() {
    let (_cwd, cwd) = folder();
    let (_plugins, plugins) = plugins_with_writer();
    let (_cache, cache) = folder();
    std::fs::write(
        cwd.join("piton.toml"),
        config(&[write_mount(&cache, "/cache")]),
    )
    .expect("write");

    let mut serve = Serve::start(&cwd, &plugins, &[("PITON_CACHE_DIR", &cache)]);
    let answer = attack(
        &mut serve,
        json!({"mode": "add", "op": "write", "path": "/cache/planted.cwasm", "content": "native code"}),
    );
    assert!(
        !cache.join("planted.cwasm").exists(),
        "the guest wrote into the cache: {answer}"
    );
    assert_refused_at_load(&mut serve, &cache, &cache);
}

/// Reading those places stays allowed.
#[test]
fn a_read_mount_of_the_plugins_folder_and_config_loads() {
    let (_cwd, cwd) = folder();
    let (_plugins, plugins) = plugins_with_writer();
    std::fs::write(
        cwd.join("piton.toml"),
        config(&[read_mount(&plugins, "/data"), read_mount(&cwd, "/cwd")]),
    )
    .expect("write");
    let mut serve = Serve::start(&cwd, &plugins, &[]);
    assert_eq!(
        serve.tools(),
        ["fs_write", "word_count"],
        "{}",
        serve.stderr()
    );
}

/// A stdio upstream's script is code piton runs at the next connect: a tool granted
/// "write" on the folder holding it could rewrite it. Both the program given as a path
/// and a file named by an argument are protected.
#[test]
fn a_tool_cannot_be_granted_write_on_an_upstream_servers_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = dir.path().join("server");
    std::fs::create_dir(&server).expect("server folder");
    std::fs::write(server.join("server.py"), "print()\n").expect("script");
    std::fs::write(server.join("run.sh"), "#!/bin/sh\n").expect("script");
    let file = dir.path().join("piton.toml");
    let at = piton_host::plugins::PluginsAt::Folder(dir.path().join("plugins"));
    for command in ["python3 server.py", "./run.sh"] {
        let text = format!(
            "[mcp.py]\ncommand = \"{command}\"\ncwd = \"server\"\n\n[tools.w]\nmounts = [{}]\n",
            write_mount(&server, "/w"),
        );
        let config = piton_host::config::Config::parse(&text, &file, &|_| None)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        let protected = piton_host::plugins::protected(&at, &config, crate::support::runtime());
        let refused = protected
            .check(&config.tools["w"].grants)
            .expect_err("a write mount holding the server's script is refused");
        assert!(
            matches!(&refused, ProtectedError::Write { index: 0, what, .. } if what.contains("[mcp.py]")),
            "{command}: {refused:?}"
        );
        let read = text.replace("\"write\"", "\"read\"");
        let config = piton_host::config::Config::parse(&read, &file, &|_| None).expect("parses");
        assert_eq!(
            protected.check(&config.tools["w"].grants),
            Ok(()),
            "{command}"
        );
    }
}

/// A stdio upstream runs more than its entry file: the modules its script imports from
/// the folder it runs in (`cwd`, `pkg/` beside `server.py`), and a program found on its
/// PATH. A tool granted "write" on either could change the code piton starts.
#[cfg(unix)]
#[test]
fn a_tool_cannot_be_granted_write_inside_an_upstream_servers_folder_or_on_its_program() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let server = dir.path().join("server");
    std::fs::create_dir_all(server.join("pkg")).expect("server folder");
    std::fs::write(server.join("server.py"), "import pkg\n").expect("script");
    std::fs::write(server.join("pkg/__init__.py"), "\n").expect("module");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    std::fs::write(bin.join("my-server"), "#!/bin/sh\n").expect("program");
    std::fs::set_permissions(
        bin.join("my-server"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    let file = dir.path().join("piton.toml");
    let at = piton_host::plugins::PluginsAt::Folder(dir.path().join("plugins"));
    let cases = [
        (
            "[mcp.py]\ncommand = \"python3 server.py\"\ncwd = \"server\"\n".to_owned(),
            server.join("pkg"),
        ),
        (
            format!(
                "[mcp.py]\ncommand = \"my-server --stdio\"\nenv = {{ PATH = {:?} }}\n",
                bin.display().to_string()
            ),
            bin.clone(),
        ),
    ];
    for (server_section, mounted) in cases {
        let text = format!(
            "{server_section}\n[tools.w]\nmounts = [{}]\n",
            write_mount(&mounted, "/w")
        );
        let config = piton_host::config::Config::parse(&text, &file, &|_| None)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        let protected = piton_host::plugins::protected(&at, &config, crate::support::runtime());
        let refused = protected
            .check(&config.tools["w"].grants)
            .expect_err("a write mount of the server's code is refused");
        assert!(
            matches!(&refused, ProtectedError::Write { index: 0, what, .. } if what.contains("[mcp.py]")),
            "{text}: {refused:?}"
        );
        assert!(
            refused.to_string().contains("mode = \"read\""),
            "{text}: {refused}"
        );
        let read = text.replace("\"write\"", "\"read\"");
        let config = piton_host::config::Config::parse(&read, &file, &|_| None).expect("parses");
        assert_eq!(protected.check(&config.tools["w"].grants), Ok(()), "{text}");
    }
}
