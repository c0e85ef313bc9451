//! What README.md's "Install" section promises a user: the binary `cargo install`
//! leaves, alone in a folder of its own, runs the bundled examples from anywhere with
//! nothing else on the machine; the `cargo install` commands name a package that
//! builds the `piton` binary; and the desktop client's `mcpServers` entry, run as
//! written, answers `initialize` and lists the tools over stdio.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::mcp_client::StdioPiton;
use crate::support::{stderr, stdout};

/// The README's "Install" section, up to the next `## `.
fn install_section() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(&readme).expect("README.md");
    let start = text
        .find("\n## Install\n")
        .expect("README.md has an Install section");
    let section = &text[start + 1..];
    let end = section[3..]
        .find("\n## ")
        .map_or(section.len(), |at| at + 4);
    section[..end].to_owned()
}

/// The fenced code blocks of `text` in language `lang`.
fn code_blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    text.split(&fence)
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default().to_owned())
        .collect()
}

/// A folder for a user's home, on the file system of the built binary (so that
/// [`installed`] can link it).
fn new_home() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir")
}

/// A copy of the built binary alone in `dir/bin`, as `cargo install` leaves it.
fn installed(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin folder");
    let piton = bin.join("piton");
    // A link: a copy's write handle, inherited by a process another test forks at
    // that moment, would make running it fail with "text file busy".
    if std::fs::hard_link(env!("CARGO_BIN_EXE_piton"), &piton).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_piton"), &piton).expect("copy the binary");
    }
    piton
}

/// `command` with nothing of the test's environment: a new home and working
/// folder, and a PATH of system folders only.
fn clean(mut command: Command, home: &Path) -> Command {
    let work = home.join("work");
    std::fs::create_dir_all(&work).expect("a working folder");
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .current_dir(work);
    command
}

#[test]
fn the_installed_binary_alone_runs_the_bundled_examples_from_anywhere() {
    let home = new_home();
    let piton = installed(home.path());
    let mut call = clean(Command::new(&piton), home.path());
    let out = call
        .args(["call", "word_count", r#"{"text":"a b c"}"#])
        .stdin(Stdio::null())
        .output()
        .expect("piton runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "3");
    // The compile cache went where the README says, under the user's home.
    let cache = home.path().join(".cache/piton");
    let entries = std::fs::read_dir(&cache)
        .unwrap_or_else(|e| panic!("{}: {e}", cache.display()))
        .count();
    assert!(entries > 0, "nothing cached in {}", cache.display());
}

/// The packages of this workspace that have a `piton` binary target, and how many
/// packages have any binary target, from `cargo metadata`.
fn binary_packages() -> (Vec<(String, PathBuf)>, usize) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let has_bin = |package: &Value, name: Option<&str>| {
        package["targets"].as_array().is_some_and(|targets| {
            targets
                .iter()
                .any(|t| t["kind"] == json!(["bin"]) && name.is_none_or(|name| t["name"] == name))
        })
    };
    let piton = packages
        .iter()
        .filter(|p| has_bin(p, Some("piton")))
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("a path"));
            let dir = manifest.parent().expect("a folder").to_path_buf();
            (p["name"].as_str().expect("a name").to_owned(), dir)
        })
        .collect();
    let with_binaries = packages.iter().filter(|p| has_bin(p, None)).count();
    (piton, with_binaries)
}

#[test]
fn the_readme_cargo_install_commands_name_the_package_of_the_piton_binary() {
    let (piton, with_binaries) = binary_packages();
    let [(package, dir)] = piton.as_slice() else {
        panic!("one package has the `piton` binary: {piton:?}");
    };
    let section = install_section();
    let blocks = code_blocks(&section, "sh");
    let commands: Vec<&str> = blocks
        .first()
        .expect("the install commands")
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| line.starts_with("cargo install"))
        .collect();
    let by_path = commands
        .iter()
        .find(|c| c.contains("--path"))
        .expect("cargo install --path");
    let path = by_path
        .split_whitespace()
        .skip_while(|w| *w != "--path")
        .nth(1)
        .expect("--path DIR");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert_eq!(
        std::fs::canonicalize(root.join(path)).expect("the --path folder"),
        std::fs::canonicalize(dir).expect("the package folder"),
        "{by_path}"
    );
    let by_git = commands
        .iter()
        .find(|c| c.contains("--git"))
        .expect("cargo install --git");
    // cargo refuses a --git install that names no package when several have binaries.
    if with_binaries > 1 {
        assert!(
            by_git.split_whitespace().any(|w| w == package),
            "`{by_git}` must name {package}: {with_binaries} packages have binaries"
        );
    }
    for command in &commands {
        assert!(
            command.contains("--locked"),
            "{command}: the versions in Cargo.lock"
        );
    }
}

/// The one server of the README's desktop client configuration: command and args.
fn desktop_server() -> (String, Vec<String>, serde_json::Map<String, Value>) {
    let blocks = code_blocks(&install_section(), "json");
    let config: Value = blocks
        .iter()
        .find(|b| b.contains("mcpServers"))
        .map(|b| serde_json::from_str(b).expect("the mcpServers block is JSON"))
        .expect("an mcpServers block in Install");
    let servers = config["mcpServers"].as_object().expect("mcpServers");
    assert_eq!(servers.len(), 1, "{servers:?}");
    let server = &servers["piton"];
    let command = server["command"].as_str().expect("command").to_owned();
    let args = serde_json::from_value(server["args"].clone()).expect("args: strings");
    let env = server["env"].as_object().cloned().unwrap_or_default();
    (command, args, env)
}

#[test]
fn the_readme_desktop_client_config_starts_piton_and_answers_over_stdio() {
    let (command, args, env) = desktop_server();
    assert_eq!(
        command, "piton",
        "found on PATH, where cargo install puts it"
    );
    let home = new_home();
    let piton = installed(home.path());
    // A desktop client starts it by name, from a folder of its own, with its own env.
    let mut start = clean(Command::new(&command), home.path());
    let path = format!("{}:/usr/bin:/bin", piton.parent().expect("bin").display());
    start.env("PATH", path).args(&args);
    for (name, value) in &env {
        start.env(name, value.as_str().expect("env values are text"));
    }
    let mut piton = StdioPiton::run(start);
    let names = piton.tools(1);
    assert!(names.iter().any(|n| n == "word_count"), "{names:?}");
}
