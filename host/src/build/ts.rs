//! Building a TypeScript tool module: the module's folder is staged in a temporary
//! folder with piton's JavaScript SDK and its types (`piton.js`, `piton.d.ts`, from
//! guest-sdk/js) and a `tsconfig.json` of piton's; `tsc` (npm's `typescript`, run by
//! Node) type-checks it, strict, against those types; `esbuild` bundles the module and
//! what it imports (its own files, pure-JavaScript npm packages of its
//! `node_modules`) into one ES module, leaving `./piton.js` to the JavaScript build,
//! which then makes the bundle a component as it makes any JavaScript module (js.rs).
//! So a tool whose arguments do not fit its `inputSchema` fails the build with tsc's
//! message, naming the file and line.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::js;
use super::project::{BuildError, Lang, Source, Toolchains, run};
use super::stage::{stage, write};

/// The SDK's types, beside `piton.js`.
pub const SDK_TYPES: &str = include_str!("../../../guest-sdk/js/piton.d.ts");

/// The versions piton is tested with, pinned in tests/peers/package.json.
pub(crate) const TYPESCRIPT_VERSION: &str = "7.0.2";
pub(crate) const ESBUILD_VERSION: &str = "0.28.2";

/// The command that installs both.
const INSTALL: &str = "npm install -g typescript@7.0.2 esbuild@0.28.2";

/// piton's compiler options: strict, ES2022 modules resolved as a bundler does, the
/// globals the component has (ECMAScript and the web APIs of the DOM library: fetch,
/// URL, TextEncoder, console, setTimeout), no emit; `.ts` imports allowed (as Node's
/// own type stripping needs them for a project's tests) and only syntax a type
/// stripper can erase.
pub const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "lib": ["es2023", "dom"],
    "types": [],
    "noEmit": true,
    "allowImportingTsExtensions": true,
    "erasableSyntaxOnly": true,
    "verbatimModuleSyntax": true,
    "skipLibCheck": true,
    "noUncheckedIndexedAccess": true
  }
}
"#;

/// The `tsconfig.json` `piton new` gives a project, for its editor and `tsc -p .`:
/// piton's options over the project's files but its tests, which Node runs (stripping
/// their types) and which would need Node's own types.
pub fn project_tsconfig() -> String {
    let mut config: serde_json::Value = serde_json::from_str(TSCONFIG).unwrap_or_default();
    config["include"] = serde_json::json!(["**/*.ts"]);
    config["exclude"] = serde_json::json!(["**/*.test.ts", "node_modules"]);
    serde_json::to_string_pretty(&config).unwrap_or_default() + "\n"
}

/// Builds the TypeScript module of `source` into `out`.
pub(super) fn build(
    source: &Source,
    out: &Path,
    toolchains: &Toolchains,
) -> Result<(), BuildError> {
    let node = toolchains
        .node
        .clone()
        .unwrap_or_else(|| PathBuf::from("node"));
    js::check_node(&node)?;
    let tsc = tool(
        &toolchains.tsc,
        "tsc",
        "typescript",
        TYPESCRIPT_VERSION,
        &node,
    )?;
    let esbuild = tool(
        &toolchains.esbuild,
        "esbuild",
        "esbuild",
        ESBUILD_VERSION,
        &node,
    )?;
    let file_name = source
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tools.ts".to_owned());
    let stem = file_name
        .rsplit_once('.')
        .map_or(file_name.as_str(), |(stem, _)| stem);
    let failed = |message: String| BuildError::Failed {
        lang: Lang::Ts,
        message,
    };
    if stem == "piton" {
        return Err(failed(format!(
            "{}: piton puts its SDK in piton.js beside the module it builds; give your \
             module another name, such as tools.ts",
            source.file.display()
        )));
    }

    let temp = tempfile::Builder::new()
        .prefix("piton-ts-")
        .tempdir()
        .map_err(|error| BuildError::Io {
            what: "cannot make a temporary folder for the TypeScript build".to_owned(),
            error,
        })?;
    let src = temp.path().join("src");
    stage(source, &src, Lang::Ts)?;
    write(&src.join("piton.js"), js::SDK)?;
    write(&src.join("piton.d.ts"), SDK_TYPES)?;
    // The project's npm packages, for tsc's types and esbuild's bundle.
    let modules = source.dir.join("node_modules");
    #[cfg(unix)]
    if modules.is_dir() {
        let _ = std::os::unix::fs::symlink(
            std::path::absolute(&modules).unwrap_or(modules),
            src.join("node_modules"),
        );
    }
    let config = serde_json::from_str::<serde_json::Value>(TSCONFIG)
        .map(|mut config| {
            config["files"] = serde_json::json!([file_name]);
            config.to_string()
        })
        .map_err(|e| failed(format!("piton's tsconfig does not parse: {e}")))?;
    write(&src.join("tsconfig.piton.json"), &config)?;

    let mut check = Command::new(&node);
    check
        .arg(&tsc)
        .args(["-p", "tsconfig.piton.json", "--pretty", "false"])
        .current_dir(&src);
    run(&mut check, "tsc").map_err(|message| {
        failed(format!(
            "{}: it does not type-check (paths are relative to {}):\n{}",
            source.file.display(),
            source.dir.display(),
            tsc_errors(&message)
        ))
    })?;

    let bundled = temp.path().join("out");
    let bundle = bundled.join(format!("{stem}.js"));
    let mut pack = Command::new(&node);
    pack.arg(&esbuild)
        .arg(&file_name)
        .args([
            "--bundle",
            "--format=esm",
            "--platform=neutral",
            "--main-fields=module,main",
            "--target=es2022",
            "--external:./piton.js",
            "--keep-names",
            "--log-level=error",
            "--color=false",
        ])
        .arg(format!("--outfile={}", bundle.display()))
        .current_dir(&src);
    run(&mut pack, "esbuild").map_err(|message| {
        failed(format!(
            "{}: esbuild could not bundle it (paths are relative to {}):\n{message}",
            source.file.display(),
            source.dir.display()
        ))
    })?;

    let as_js = Source {
        lang: Lang::Js,
        dir: bundled.clone(),
        file: bundle,
        name: source.name.clone(),
    };
    js::build(&as_js, out, toolchains).map_err(|error| match error {
        BuildError::Failed { message, .. } => failed(message.replace(
            &bundled.display().to_string(),
            &source.dir.display().to_string(),
        )),
        other => other,
    })
}

/// The script of an npm tool (`tsc`, `esbuild`) that runs under `node` and says its
/// version, or `Missing` with the npm command.
fn tool(
    given: &Option<PathBuf>,
    bin: &str,
    package: &str,
    version: &str,
    node: &Path,
) -> Result<PathBuf, BuildError> {
    let what = format!("{package} {version}");
    let missing = |what: String| BuildError::Missing {
        lang: Lang::Ts,
        what,
        install: INSTALL.to_owned(),
    };
    let script = match given {
        Some(path) => path.clone(),
        None => {
            js::on_path(bin).ok_or_else(|| missing(format!("{what} ({bin} is not on PATH)")))?
        }
    };
    let output = Command::new(node)
        .arg(&script)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| missing(format!("{what} (cannot run {}: {e})", script.display())))?;
    if !output.status.success() {
        return Err(missing(format!(
            "{what} ({} does not run under {})",
            script.display(),
            node.display()
        )));
    }
    Ok(script)
}

/// tsc's errors without the run's own header.
fn tsc_errors(message: &str) -> String {
    message
        .lines()
        .filter(|l| !l.starts_with("tsc failed ("))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piton_tsconfig_is_json_with_the_strict_options() {
        let config: serde_json::Value = serde_json::from_str(TSCONFIG).expect("JSON");
        assert_eq!(config["compilerOptions"]["strict"], true);
        assert_eq!(config["compilerOptions"]["noEmit"], true);
    }

    #[test]
    fn a_missing_tsc_names_the_npm_command() {
        let error = tool(
            &Some(PathBuf::from("/nonexistent/tsc")),
            "tsc",
            "typescript",
            TYPESCRIPT_VERSION,
            Path::new("/nonexistent/node"),
        )
        .expect_err("nothing runs there");
        assert!(error.to_string().contains(INSTALL), "{error}");
    }
}
