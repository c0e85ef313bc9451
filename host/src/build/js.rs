//! Building a JavaScript tool module with `@bytecodealliance/componentize-js`: the
//! module's folder is staged in a temporary folder together with piton's own copy of
//! the SDK (`piton.js`, embedded from guest-sdk/js) and an entry module that exports
//! the `toolbox` interface over every `tool(...)` the user's module exports; the
//! componentize-js CLI, run by Node (never with `--aot`, which downloads weval),
//! builds that into a `toolbox-plugin` component of the embedded wit/tool.wit. The
//! user's module is evaluated at build time (componentize-js snapshots it), so a bad
//! tool (a bad name, contradicting hints) fails the build; its message is cut down
//! to the exception and the user's stack frames, named by the file.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::project::{BuildError, Lang, Source, Toolchains};
use super::stage::{stage, write};

/// The SDK a JavaScript tool imports as `./piton.js`.
pub const SDK: &str = include_str!("../../../guest-sdk/js/piton.js");

/// The contract the component is built for.
const WIT: &str = include_str!("../../../wit/tool.wit");

/// The componentize-js version piton builds with.
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";

/// The command that installs it. preview2-shim is named too: componentize-js 0.23.0
/// imports it without listing it, and needs 0.25 (0.26 no longer preopens `/`).
const INSTALL: &str = "npm install -g @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/preview2-shim@0.25.0";

/// The entry module, beside the user's: it names no user file but `./{file}`.
const ENTRY: &str = ".piton-entry.js";

/// How long componentize-js may run: it evaluates the module's top level, which is the
/// user's code and may never end.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// Builds the module of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let node = toolchains
        .node
        .clone()
        .unwrap_or_else(|| PathBuf::from("node"));
    check_node(&node)?;
    let cli = componentize_js(toolchains, &node)?;

    let staging = tempfile::Builder::new()
        .prefix("piton-js-")
        .tempdir()
        .map_err(|error| BuildError::Io {
            what: "cannot make a temporary folder to build in".to_owned(),
            error,
        })?;
    let src = staging.path().join("src");
    let file_name = source
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tools.js".to_owned());
    if file_name == "piton.js" || file_name == ENTRY {
        return Err(BuildError::Failed {
            lang: Lang::Js,
            message: format!(
                "{}: piton puts its SDK in piton.js beside the module it builds; give your \
                 module another name, such as tools.js",
                source.file.display()
            ),
        });
    }
    stage(source, &src, Lang::Js)?;
    let wit = staging.path().join("wit");
    write(&wit.join("tool.wit"), WIT)?;
    write(&src.join("piton.js"), SDK)?;
    write(&src.join(ENTRY), &entry(&file_name))?;

    let built = staging.path().join("out.wasm");
    let mut command = Command::new(&node);
    command
        .arg(&cli)
        .arg(ENTRY)
        .arg("--wit")
        .arg(&wit)
        .args(["--world-name", "toolbox-plugin", "-o"])
        .arg(&built)
        .current_dir(&src)
        // componentize-js puts its work folder in the temporary folder.
        .env("TMPDIR", staging.path());
    run_within(&mut command, TIME_LIMIT).map_err(|failure| BuildError::Failed {
        lang: Lang::Js,
        message: match failure {
            Failure::Output(output) => explain(&source.file, &source.dir, &output),
            Failure::Other(reason) => format!("{}: {reason}", source.file.display()),
        },
    })?;
    std::fs::copy(&built, out).map_err(|error| BuildError::Io {
        what: format!("cannot write {}", out.display()),
        error,
    })?;
    Ok(())
}

/// Why componentize-js gave no component.
enum Failure {
    /// It ran and failed: what it wrote (stderr, then stdout; the last 16 KiB).
    Output(String),
    /// It could not run, or ran out of time.
    Other(String),
}

/// Runs `command` (Node running componentize-js, which runs wizer) in its own process
/// group, killed whole when it runs longer than `limit`.
fn run_within(command: &mut Command, limit: Duration) -> Result<(), Failure> {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Other(format!("cannot run componentize-js: {e}")))?;
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as Box<_>));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as Box<_>));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                #[cfg(unix)]
                if let Some(group) = i32::try_from(child.id())
                    .ok()
                    .and_then(rustix::process::Pid::from_raw)
                {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) if status.success() => Ok(()),
        Some(status) => {
            let mut text = format!("componentize-js failed ({status}):\n{stderr}\n{stdout}");
            const MAX: usize = 16 << 10;
            if text.len() > MAX {
                let mut cut = text.len() - MAX;
                while !text.is_char_boundary(cut) {
                    cut += 1;
                }
                text = text.split_off(cut);
            }
            Err(Failure::Output(text))
        }
        None => Err(Failure::Other(format!(
            "building it did not end within {} s: piton runs the module's top level while \
             it builds it; does it loop forever?",
            limit.as_secs()
        ))),
    }
}

/// The entry module: the user's tools as the contract's `toolbox` interface.
fn entry(file: &str) -> String {
    let spec = serde_json::to_string(&format!("./{file}")).unwrap_or_default();
    let name = serde_json::to_string(file).unwrap_or_default();
    format!(
        "import * as tools from {spec};\n\
         import {{ toolboxOf }} from \"./piton.js\";\n\
         export const toolbox = toolboxOf(tools, {name});\n"
    )
}

/// Node ≥ 20 (componentize-js needs it), or `Missing`.
pub(crate) fn check_node(node: &Path) -> Result<(), BuildError> {
    let missing = |found: String| BuildError::Missing {
        lang: Lang::Js,
        what: format!("Node.js 20 or later ({found})"),
        install: "apt-get install nodejs (Debian 13 or later; or Node.js 20+ from nodejs.org)"
            .to_owned(),
    };
    let output = Command::new(node)
        .arg("--version")
        .output()
        .map_err(|e| missing(format!("cannot run {}: {e}", node.display())))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major = version
        .strip_prefix('v')
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(major) if output.status.success() && major >= 20 => Ok(()),
        _ => Err(missing(format!("{} is {version:?}", node.display()))),
    }
}

/// The componentize-js CLI script, checked to be the version piton builds with.
fn componentize_js(toolchains: &Toolchains, node: &Path) -> Result<PathBuf, BuildError> {
    let what = format!("@bytecodealliance/componentize-js {COMPONENTIZE_JS_VERSION}");
    let missing = |what: String| BuildError::Missing {
        lang: Lang::Js,
        what,
        install: INSTALL.to_owned(),
    };
    let cli = match &toolchains.componentize_js {
        Some(cli) => cli.clone(),
        None => on_path("componentize-js")
            .ok_or_else(|| missing(format!("{what} (componentize-js is not on PATH)")))?,
    };
    let output = Command::new(node)
        .arg(&cli)
        .arg("--version")
        .output()
        .map_err(|e| missing(format!("{what} (cannot run {}: {e})", cli.display())))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(missing(format!(
            "{what} ({} does not run: {})",
            cli.display(),
            first.trim()
        )));
    }
    if version != COMPONENTIZE_JS_VERSION {
        return Err(missing(format!(
            "{what} ({} is version {version:?})",
            cli.display()
        )));
    }
    Ok(cli)
}

/// `name` in a folder of `PATH`.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// componentize-js's failure as one message naming the file: the exception the
/// module threw while it was evaluated (or the tool's own error), with the stack
/// frames in the user's files, without Node's and the SDK's own frames.
fn explain(file: &Path, dir: &Path, output: &str) -> String {
    const EVALUATING: &str = "Exception while evaluating top-level script";
    let lines: Vec<&str> = output.lines().collect();
    let start = lines.iter().position(|l| l.contains(EVALUATING));
    let body: Vec<String> = match start {
        Some(at) => evaluation_error(&lines[at + 1..]),
        None => other_error(&lines),
    };
    let relative = if body.iter().any(|l| l.contains(".js:")) {
        format!(" (paths are relative to {})", dir.display())
    } else {
        String::new()
    };
    if body.is_empty() {
        return format!(
            "{}: componentize-js could not build it{relative}:\n{output}",
            file.display()
        );
    }
    let verb = if start.is_some() {
        "the module failed while piton built it"
    } else {
        "componentize-js could not build it"
    };
    format!(
        "{}: {verb}{relative}:\n  {}",
        file.display(),
        body.join("\n  ")
    )
}

/// The exception of a module evaluated at build time, and the user's stack frames.
fn evaluation_error(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_stack = false;
    for line in lines {
        if line.starts_with("    at ") || line.starts_with("Node.js v") {
            break;
        }
        if line.starts_with("Additionally, some promises were rejected")
            || line.starts_with("Promise rejected but never handled")
        {
            continue;
        }
        if line.trim() == "Stack:" {
            in_stack = true;
            continue;
        }
        if in_stack {
            // `  name@file.js:1:2`: the user's frames only.
            let frame = line.trim();
            let at = frame.rsplit_once('@').map_or(frame, |(_, at)| at);
            if !at.is_empty() && !is_ours(at) && !out.iter().any(|l| l == &format!("at {at}")) {
                out.push(format!("at {at}"));
            }
            continue;
        }
        let line = strip_sdk_location(line);
        if !line.trim().is_empty() && !out.iter().any(|l| l == line) {
            out.push(line.to_owned());
        }
    }
    out
}

/// Another failure (the WIT, the files): Node's error lines without its stack.
fn other_error(lines: &[&str]) -> Vec<String> {
    let start = lines
        .iter()
        .position(|l| l.starts_with("Error") || l.contains("Error: "))
        .unwrap_or(0);
    lines[start..]
        .iter()
        .take_while(|l| !l.starts_with("    at ") && !l.starts_with("Node.js v"))
        .filter(|l| !l.trim().is_empty())
        .map(|l| (*l).to_owned())
        .collect()
}

/// True for a location in piton's staged SDK or entry module.
fn is_ours(at: &str) -> bool {
    at.starts_with("piton.js:") || at.starts_with(ENTRY)
}

/// `piton.js:12:3 TypeError: ...` as `TypeError: ...`: where in the SDK an error was
/// thrown tells the user nothing; the stack below says where in their module.
fn strip_sdk_location(line: &str) -> &str {
    let Some(rest) = line.strip_prefix("piton.js:") else {
        return line;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
    rest.strip_prefix(' ').unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BAD_NAME: &str = "file:///x/componentize.js:365
    throw new Error(err);
Error: Failed to initialize component (wizer (/x/wizer)):
Exception while evaluating top-level script
piton.js:163:13 TypeError: a tool's name must match [A-Za-z0-9_-]{1,64}, not \"bad name\"
Additionally, some promises were rejected, but the rejection never handled:
Promise rejected but never handled: a tool's name must match [A-Za-z0-9_-]{1,64}, not \"bad name\"
Stack:
  Tool@piton.js:163:13
  FunctionTool@piton.js:226:5
  tool@piton.js:277:10
  @tools.js:2:22
    at componentize (file:///x/componentize.js:365:11)

Node.js v22.23.5";

    #[test]
    fn an_exception_at_build_time_is_the_message_and_the_users_frames() {
        let message = explain(Path::new("p/tools.js"), Path::new("p"), BAD_NAME);
        assert_eq!(
            message,
            "p/tools.js: the module failed while piton built it (paths are relative to p):\n  \
             TypeError: a tool's name must match [A-Za-z0-9_-]{1,64}, not \"bad name\"\n  \
             at tools.js:2:22"
        );
    }

    #[test]
    fn a_syntax_error_keeps_its_location() {
        let output = "Error: Failed to initialize component (wizer (/x/wizer)):
Exception while evaluating top-level script
tools.js:2:48 SyntaxError: expected expression, got ';':
tools.js:2:48 export const a = tool(function a() { return 1 +; });
tools.js:2:48 ...............................................^
    at componentize (file:///x/componentize.js:365:11)";
        let message = explain(Path::new("tools.js"), Path::new("."), output);
        assert!(
            message.starts_with("tools.js: the module failed while piton built it")
                && message.contains("tools.js:2:48 SyntaxError: expected expression")
                && message.contains("...^")
                && !message.contains("componentize.js"),
            "{message}"
        );
    }

    #[test]
    fn another_failure_is_nodes_error_without_its_stack() {
        let output = "file:///x/splicer.js:5095
    throw new ComponentError(retCopy.val);
          ^

ComponentError: reading file /w/wit

Caused by:
    No such file or directory (os error 44)
    at Object.spliceBindings (file:///x/splicer.js:5095:11)
Node.js v22.23.5";
        let message = explain(Path::new("t.js"), Path::new("."), output);
        assert_eq!(
            message,
            "t.js: componentize-js could not build it:\n  ComponentError: reading file /w/wit\n  \
             Caused by:\n      No such file or directory (os error 44)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_build_that_does_not_end_is_killed_with_its_children() {
        let started = Instant::now();
        let failure = run_within(
            Command::new("sh").args(["-c", "sleep 30 & sleep 30"]),
            Duration::from_millis(200),
        );
        assert!(
            matches!(&failure, Err(Failure::Other(m)) if m.contains("did not end within")),
            "{}",
            matches!(failure, Ok(())),
        );
        // Had the background sleep lived on, its stdout would keep the pipe open.
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[cfg(unix)]
    #[test]
    fn a_failed_build_gives_what_it_wrote() {
        let failure = run_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        );
        let Err(Failure::Output(text)) = failure else {
            panic!("a failure with output");
        };
        assert!(
            text.contains("exit status: 3") && text.contains("err\n\nout"),
            "{text}"
        );
        assert!(run_within(&mut Command::new("true"), Duration::from_secs(30)).is_ok());
    }

    #[test]
    fn the_entry_imports_the_users_file_by_a_quoted_path() {
        let text = entry("my \"tools\".js");
        assert!(
            text.contains(r#"import * as tools from "./my \"tools\".js";"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolboxOf(tools, "my \"tools\".js")"#),
            "{text}"
        );
    }
}
