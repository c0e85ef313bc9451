//! A component's permission profile: what a person needs to see before trusting it.
//! Its tools with their hints (whether `hints-for` can narrow them per call) and
//! input schemas, every capability its WASI imports could use, and — given a
//! piton.toml — which of those each tool is granted.
//!
//! It is read the way a load reads the component (compiled, its world checked, its
//! specs and hints asked in an instance with nothing granted: [`WasmRuntime::check`]),
//! so a profile exists only for a component that would load.
//!
//! ```no_run
//! use piton_host::config::Config;
//! use piton_host::supply::profile::Profile;
//! use piton_host::wasm::{RuntimeConfig, WasmRuntime};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = WasmRuntime::new(RuntimeConfig::default())?;
//! let profile = Profile::of_file("plugins/fetch_url.wasm".as_ref(), &runtime).await?;
//! let config = Config::load("plugins/piton.toml".as_ref())?;
//! print!("{}", profile.show(Some(&profile.granted(&config))));
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use piton_wit::Hints;

use super::capability::{Capability, ImportKind, Imports};
use super::grant::ToolGrant;
use super::schema_diff::summary;
use crate::config::Config;
use crate::error::LoadError;
use crate::limits::format_size_about;
use crate::source::ToolSource;
use crate::term::{cut_end, escape};
use crate::tool::Tool as _;
use crate::wasm::check::Checked;
use crate::wasm::{LoadFrom, WasmRuntime};

/// The most characters of a description a profile shows (its first line).
const DESCRIPTION_SHOWN: usize = 100;

/// A component's permission profile. See the module.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// The component file, or what its bytes were named. piton.toml's
    /// `from = "FILE.wasm"` is matched against its file name: set it to the name the
    /// component will have in the plugins folder when profiling a download.
    pub file: PathBuf,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The piton world it exports: `plugin` or `toolbox-plugin`.
    pub world: String,
    /// Its tools, by name.
    pub tools: Vec<ToolProfile>,
    /// What it imports, sorted into capabilities.
    pub imports: Imports,
}

/// One tool of a [`Profile`], as the component declares it (before piton.toml's
/// overrides).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolProfile {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its hints: the most any call of it may do.
    pub hints: Hints,
    /// Whether its `hints-for` can narrow its hints for one call (always for a
    /// `plugin`; as a toolbox declares it for its tools).
    pub hints_for: bool,
    /// Whether its calls may run in parallel.
    pub parallel: bool,
    /// Its input schema.
    pub input_schema: serde_json::Value,
}

/// Why a component has no profile: it does not load. The error names the file.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(#[from] pub LoadError);

/// What piton.toml grants each tool of a [`Profile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Granted {
    /// The piton.toml read, if it came from a file.
    pub config: Option<PathBuf>,
    /// By tool, in the profile's order.
    pub tools: Vec<ToolGrant>,
}

impl Granted {
    /// What is granted the tool `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolGrant> {
        self.tools.iter().find(|t| t.tool == name)
    }
}

impl Profile {
    /// The profile of the component file `path`, loaded as `runtime` loads it.
    pub async fn of_file(path: &Path, runtime: &WasmRuntime) -> Result<Self, ProfileError> {
        Self::of(LoadFrom::File(path.to_path_buf()), path, runtime).await
    }

    /// The profile of a component's `bytes` (fetched, not yet written), named `file`
    /// (the file it will be, or where it came from) in the profile and in errors.
    pub async fn of_bytes(
        file: impl Into<PathBuf>,
        bytes: Vec<u8>,
        runtime: &WasmRuntime,
    ) -> Result<Self, ProfileError> {
        let file = file.into();
        let what = LoadFrom::Bytes(ToolSource::File(file.clone()), bytes);
        Self::of(what, &file, runtime).await
    }

    async fn of(what: LoadFrom, file: &Path, runtime: &WasmRuntime) -> Result<Self, ProfileError> {
        let checked = runtime.check(what).await?;
        Ok(Self::of_checked(file, &checked))
    }

    /// The profile of a component already checked (as `piton add` checks what it
    /// fetched), named `file`.
    pub fn of_checked(file: &Path, checked: &Checked) -> Self {
        let info = checked.tools.first().map(|t| t.info().clone());
        let mut tools: Vec<ToolProfile> = checked
            .tools
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                ToolProfile {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    hints: tool.hints(),
                    hints_for: tool.has_hints_for(),
                    parallel: spec.parallel,
                    input_schema: spec.input_schema.clone(),
                }
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let (sha256, size, imports) = match info {
            Some(info) => (info.sha256, info.size, info.imports),
            None => Default::default(),
        };
        Self {
            file: file.to_path_buf(),
            sha256,
            size,
            world: checked.world.to_owned(),
            tools,
            imports: Imports::of(imports.iter().map(String::as_str)),
        }
    }

    /// Its tool `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolProfile> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// What `config` grants each of its tools.
    pub fn granted(&self, config: &Config) -> Granted {
        Granted {
            config: config.file.clone(),
            tools: self
                .tools
                .iter()
                .map(|t| ToolGrant::of(&t.name, t.hints, &self.file, config))
                .collect(),
        }
    }

    /// The profile for a terminal; with `granted`, each tool's grants under it.
    /// Text from the component is shown with control characters escaped.
    pub fn show<'a>(&'a self, granted: Option<&'a Granted>) -> impl fmt::Display + 'a {
        Shown {
            profile: self,
            granted,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.show(None).fmt(f)
    }
}

/// Hints in words, each of the four said when it is not implied:
/// `read_only, closed_world` (read-only implies not destructive and idempotent), or
/// `not read_only, not destructive, not idempotent, open_world`.
pub fn hint_words(hints: Hints) -> String {
    let world = if hints.is_open_world() {
        "open_world"
    } else {
        "closed_world"
    };
    if hints.is_read_only() {
        return format!("read_only, {world}");
    }
    let not = |yes: bool| if yes { "" } else { "not " };
    format!(
        "not read_only, {}destructive, {}idempotent, {world}",
        not(hints.is_destructive()),
        not(hints.is_idempotent())
    )
}

/// [`Profile::show`].
struct Shown<'a> {
    profile: &'a Profile,
    granted: Option<&'a Granted>,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.profile;
        let count = p.tools.len();
        writeln!(
            f,
            "{}: a {} with {count} tool{}, {}, sha256 {}",
            escape(&p.file.display().to_string(), false),
            p.world,
            if count == 1 { "" } else { "s" },
            format_size_about(p.size),
            p.sha256.get(..16).unwrap_or(&p.sha256),
        )?;
        writeln!(f, "  capabilities its imports could use:")?;
        for capability in Capability::ALL {
            let interfaces: Vec<_> = p
                .imports
                .of_kind(ImportKind::Capability(capability))
                .collect();
            let shown = if interfaces.is_empty() {
                "none".to_owned()
            } else {
                interfaces.join(", ")
            };
            writeln!(f, "    {:<12} {shown}", capability.name())?;
        }
        let unknown: Vec<_> = p.imports.of_kind(ImportKind::Unknown).collect();
        if !unknown.is_empty() {
            let unknown: Vec<_> = unknown.iter().map(|i| escape(i, false)).collect();
            writeln!(f, "    {:<12} {}", "unknown", unknown.join(", "))?;
        }
        let harmless = p.imports.harmless_families();
        if !harmless.is_empty() {
            writeln!(f, "    {:<12} {}", "harmless", harmless.join(", "))?;
        }
        for tool in &p.tools {
            writeln!(
                f,
                "  tool {}: {}",
                escape(&tool.name, false),
                hint_words(tool.hints)
            )?;
            let first = tool.description.lines().next().unwrap_or_default();
            let first = escape(first, false);
            writeln!(f, "    {}", cut_end(&first, DESCRIPTION_SHOWN))?;
            writeln!(f, "    input:       {}", summary(&tool.input_schema))?;
            writeln!(
                f,
                "    hints-for:   {}",
                if tool.hints_for {
                    "yes: a call may narrow these hints"
                } else {
                    "no"
                }
            )?;
            let Some(granted) = self.granted else {
                continue;
            };
            let Some(grant) = granted.tool(&tool.name) else {
                continue;
            };
            for capability in Capability::ALL {
                let imported = p.imports.uses(capability);
                if !imported && !grant.grants(capability) {
                    continue;
                }
                let mut line = grant.line(capability);
                if !imported {
                    line.push_str("; unused: nothing it imports reaches it");
                }
                writeln!(f, "    {:<12} {line}", format!("{}:", capability.name()))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn profile() -> Profile {
        Profile {
            file: "lookup.wasm".into(),
            sha256: "3f9a1c0d2b7e5f61aa".into(),
            size: 93_000,
            world: "plugin".into(),
            tools: vec![ToolProfile {
                name: "lookup".into(),
                description: "Look up a word.\nMore.".into(),
                hints: Hints::read_only().open_world(false),
                hints_for: false,
                parallel: true,
                input_schema: json!({
                    "type": "object",
                    "properties": {"word": {"type": "string"}},
                    "required": ["word"],
                }),
            }],
            imports: Imports::of([
                "wasi:cli/environment@0.2.6",
                "wasi:clocks/wall-clock@0.2.6",
                "wasi:cli/stdout@0.2.6",
            ]),
        }
    }

    #[test]
    fn a_profile_shows_tools_hints_and_capabilities() {
        let shown = profile().to_string();
        let expected = "\
lookup.wasm: a plugin with 1 tool, 90.8 KiB, sha256 3f9a1c0d2b7e5f61
  capabilities its imports could use:
    files        none
    network      none
    environment  wasi:cli/environment
    harmless     clocks, stdio (captured)
  tool lookup: read_only, closed_world
    Look up a word.
    input:       word: string (required)
    hints-for:   no
";
        assert_eq!(shown, expected);
    }

    #[test]
    fn with_grants_each_imported_or_granted_capability_says_whether_it_is_granted() {
        let dir = std::env::temp_dir();
        let config = Config::parse(
            &format!(
                "[tools.lookup]\nenv = {{ LANG = \"C\" }}\n\
                 mounts = [{{ host = \"{}\", guest = \"/d\", mode = \"read\" }}]\n",
                dir.display()
            ),
            &dir.join("piton.toml"),
            &|_| None,
        )
        .expect("parses");
        let profile = profile();
        let shown = profile.show(Some(&profile.granted(&config))).to_string();
        assert!(
            shown.contains("\n    environment: granted by piton.toml: LANG\n"),
            "{shown}"
        );
        assert!(
            shown.contains("(read); unused: nothing it imports reaches it\n"),
            "{shown}"
        );
        assert!(!shown.contains("network:"), "{shown}");

        let none = profile
            .show(Some(&profile.granted(&Config::default())))
            .to_string();
        assert!(none.ends_with("    environment: not granted\n"), "{none}");
    }

    #[test]
    fn text_from_the_component_cannot_drive_the_terminal() {
        let mut profile = profile();
        profile.tools[0].description = "\u{1b}]52;c;aGk=\u{7}clipboard".into();
        let shown = profile.to_string();
        assert!(!shown.contains('\u{1b}'), "{shown}");
        assert!(shown.contains("\\e]52;c;aGk=\\x07clipboard"), "{shown}");
    }
}
