//! What piton.toml grants one tool of a component, for the person deciding to add or
//! update it: each capability as `[tools.NAME]` grants it and as the tool's hints
//! bound it (a read-only tool reads a "write" mount; a closed-world tool reaches no
//! granted host). Names only: never a variable's value or a header's.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use piton_wit::Hints;

use super::capability::Capability;
use crate::config::Config;
use crate::grants::{FsAccess, MountMode, NetAccess};
use crate::term::escape;

/// What piton.toml grants one tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolGrant {
    /// The tool, by the name it gives itself (the `[tools.NAME]` it gets).
    pub tool: String,
    /// Whether its `[tools.NAME]` section applies.
    pub section: Section,
    /// Its mounts and what a call of it gets of each.
    pub mounts: Vec<MountGrant>,
    /// Its hosts, as `host:port` with the names of added headers (`+Authorization`)
    /// and `+tcp`; what a call sends is checked as `net_access` says.
    pub network: Vec<String>,
    /// Whether a call reaches the hosts granted: false for a closed-world tool.
    pub network_reached: bool,
    /// What a call may send to them.
    pub net_access: NetAccess,
    /// The names of the environment variables granted.
    pub env: Vec<String>,
}

/// Whether piton.toml's `[tools.NAME]` applies to a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "section")]
pub enum Section {
    /// There is none: nothing is granted.
    Missing,
    /// It applies.
    Applies,
    /// `from = "FILE.wasm"` gives it to another file: this tool gets nothing.
    OtherFile {
        /// The file it names.
        from: String,
    },
    /// It would make a load refuse the tool (a hint override that widens it).
    Refused {
        /// Why, in one line.
        reason: String,
    },
}

/// One mount granted, and what a call of the tool gets of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountGrant {
    /// Where the guest sees it.
    pub guest: String,
    /// The folder on the host.
    pub host: PathBuf,
    /// What piton.toml grants.
    pub mode: MountMode,
    /// What a call gets, the tool's hints bounding the grant.
    pub access: FsAccess,
}

impl ToolGrant {
    /// What `config` grants the tool `tool`, whose own hints are `hints`, of the
    /// component file `file` (matched by file name against `from`).
    pub fn of(tool: &str, hints: Hints, file: &Path, config: &Config) -> Self {
        let mut grant = Self {
            tool: tool.to_owned(),
            section: Section::Missing,
            mounts: Vec::new(),
            network: Vec::new(),
            network_reached: hints.is_open_world(),
            net_access: NetAccess::default(),
            env: Vec::new(),
        };
        let Some(settings) = config.tools.get(tool) else {
            return grant;
        };
        if let Some(from) = &settings.from
            && file.file_name().and_then(|f| f.to_str()) != Some(from.as_str())
        {
            grant.section = Section::OtherFile { from: from.clone() };
            return grant;
        }
        let hints = match settings.hints.narrow(hints) {
            Ok(hints) => hints,
            Err(e) => {
                grant.section = Section::Refused {
                    reason: e.to_string(),
                };
                return grant;
            }
        };
        let grants = &settings.grants;
        let capabilities = grants.for_call(hints);
        grant.section = Section::Applies;
        grant.mounts = capabilities
            .mounts
            .into_iter()
            .map(|(m, access)| MountGrant {
                guest: m.guest,
                host: m.host,
                mode: m.mode,
                access,
            })
            .collect();
        grant.network = grants.network.iter().map(ToString::to_string).collect();
        grant.network_reached = hints.is_open_world();
        grant.net_access = capabilities.net_access;
        grant.env = grants.env.iter().map(|(name, _)| name.clone()).collect();
        grant
    }

    /// Whether anything of `capability` is granted (reached by a call or not).
    pub fn grants(&self, capability: Capability) -> bool {
        match capability {
            Capability::Files => !self.mounts.is_empty(),
            Capability::Network => !self.network.is_empty(),
            Capability::Environment => !self.env.is_empty(),
        }
    }

    /// One line on what piton.toml grants of `capability`: `not granted`, or
    /// `granted by piton.toml: …` with how the hints bound it.
    pub fn line(&self, capability: Capability) -> String {
        match &self.section {
            Section::Missing => return "not granted".to_owned(),
            Section::OtherFile { from } => {
                return format!(
                    "not granted: piton.toml's [tools.{}] is for from = {:?}",
                    self.tool,
                    escape(from, false)
                );
            }
            Section::Refused { reason } => {
                return format!(
                    "not granted: piton.toml's [tools.{}] would refuse it: {}",
                    self.tool,
                    escape(reason, false)
                );
            }
            Section::Applies => {}
        }
        if !self.grants(capability) {
            return "not granted".to_owned();
        }
        let mut line = "granted by piton.toml: ".to_owned();
        match capability {
            Capability::Files => {
                let mounts: Vec<String> = self.mounts.iter().map(MountGrant::to_string).collect();
                line.push_str(&mounts.join(", "));
            }
            Capability::Network => {
                let hosts: Vec<_> = self.network.iter().map(|h| escape(h, false)).collect();
                line.push_str(&hosts.join(", "));
                if !self.network_reached {
                    line.push_str(" (closed_world: no call reaches them)");
                } else if self.net_access == NetAccess::ReadOnly {
                    line.push_str(" (read_only: HTTP GET, HEAD, OPTIONS only)");
                }
            }
            Capability::Environment => {
                let names: Vec<_> = self.env.iter().map(|n| escape(n, false)).collect();
                line.push_str(&names.join(", "));
            }
        }
        line
    }
}

impl fmt::Display for MountGrant {
    /// `/data = /home/me/data (write; add-only: not destructive)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = format!(
            "{} = {} (",
            escape(&self.guest, false),
            escape(&self.host.display().to_string(), false)
        );
        let _ = match (self.mode, self.access) {
            (MountMode::Read, _) => write!(text, "read"),
            (MountMode::Write, FsAccess::ReadOnly) => write!(text, "write; read_only: read"),
            (MountMode::Write, FsAccess::AddOnly) => {
                write!(text, "write; not destructive: add-only")
            }
            (MountMode::Write, FsAccess::ReadWrite) => write!(text, "write"),
        };
        text.push(')');
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let dir = std::env::temp_dir();
        Config::parse(text, &dir.join("piton.toml"), &|name| {
            (name == "TOKEN").then(|| "secret-value".to_owned())
        })
        .expect("test piton.toml parses")
    }

    #[test]
    fn nothing_is_granted_without_a_section() {
        let grant = ToolGrant::of("t", Hints::worst(), Path::new("t.wasm"), &Config::default());
        assert_eq!(grant.section, Section::Missing);
        for capability in Capability::ALL {
            assert_eq!(grant.line(capability), "not granted");
        }
    }

    #[test]
    fn grants_show_names_never_values_and_how_hints_bound_them() {
        let dir = std::env::temp_dir();
        let config = config(&format!(
            r#"
            [tools.t]
            mounts = [{{ host = "{}", guest = "/data", mode = "write" }}]
            network = [{{ host = "api.example.com:443", headers = {{ Authorization = "Bearer ${{TOKEN}}" }} }}]
            env = {{ LANG = "C", API_KEY = "hunter2" }}
            "#,
            dir.display()
        ));
        let read_only = Hints::read_only().open_world(false);
        let grant = ToolGrant::of("t", read_only, Path::new("t.wasm"), &config);
        let files = grant.line(Capability::Files);
        assert!(files.contains("/data = "), "{files}");
        assert!(files.ends_with("(write; read_only: read)"), "{files}");
        let network = grant.line(Capability::Network);
        assert_eq!(
            network,
            "granted by piton.toml: api.example.com:443 +Authorization \
             (closed_world: no call reaches them)"
        );
        let env = grant.line(Capability::Environment);
        assert_eq!(env, "granted by piton.toml: API_KEY, LANG");
        let all = format!(
            "{grant:?}{}",
            serde_json::to_string(&grant).unwrap_or_default()
        );
        for secret in ["hunter2", "Bearer", "secret-value"] {
            assert!(!all.contains(secret), "{all}");
        }

        let open = Hints::worst().destructive(false);
        let grant = ToolGrant::of("t", open, Path::new("t.wasm"), &config);
        assert!(
            grant
                .line(Capability::Files)
                .ends_with("(write; not destructive: add-only)")
        );
        assert_eq!(
            grant.line(Capability::Network),
            "granted by piton.toml: api.example.com:443 +Authorization"
        );
    }

    #[test]
    fn a_section_for_another_file_or_that_widens_grants_nothing() {
        let config = config(
            r#"
            [tools.t]
            env = { LANG = "C" }
            from = "other.wasm"
            [tools.u]
            env = { LANG = "C" }
            open_world = true
            "#,
        );
        let grant = ToolGrant::of("t", Hints::worst(), Path::new("/p/t.wasm"), &config);
        assert!(matches!(&grant.section, Section::OtherFile { from } if from == "other.wasm"));
        assert!(
            grant
                .line(Capability::Environment)
                .starts_with("not granted: ")
        );
        assert!(!grant.grants(Capability::Environment));
        let same = ToolGrant::of("t", Hints::worst(), Path::new("/p/other.wasm"), &config);
        assert_eq!(same.section, Section::Applies);

        let closed = Hints::worst().open_world(false);
        let grant = ToolGrant::of("u", closed, Path::new("u.wasm"), &config);
        assert!(
            matches!(grant.section, Section::Refused { .. }),
            "{grant:?}"
        );
        assert!(grant.env.is_empty());
    }
}
