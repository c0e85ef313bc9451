//! Pins: piton.toml's `sha256 = "…"` for a plugin file or a tool, so that only the
//! component a user checked runs. A component whose SHA-256 is not its pin's is
//! refused, the message naming the file, both digests and the fix; the other plugins
//! still load.
//!
//! ```toml
//! [plugins."word_count.wasm"]    # a file of the plugins folder, by its file name
//! sha256 = "<64 hex digits>"     # as `piton inspect` (or `sha256sum FILE`) prints it
//!
//! [tools.fetch_url]              # a tool, by the name it gives itself
//! sha256 = "<64 hex digits>"     # the digest of the file that provides it
//! ```
//!
//! A file's pin is checked on the digest of the very bytes that are compiled (or
//! whose compiled code the cache holds under that digest), before the component is
//! compiled or any of its code runs. A tool's pin is checked once the component's
//! tools are known (their names come from the component, read in an instance with no
//! capabilities), on the same digest; a mismatch refuses the whole file, each of its
//! tools. Pin the file to be sure a file replaced by one that names its tool
//! differently is refused too.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{LoadError, LoadErrorKind, LockedFile};
use crate::source::ToolSource;

/// A SHA-256 digest, as a pin gives it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256([u8; 32]);

impl Sha256 {
    /// The digest written as 64 hexadecimal digits (either case), or what is wrong
    /// with `text` and how to write it.
    pub fn parse(text: &str) -> Result<Self, PinError> {
        let digits = text.trim();
        if digits.len() != 64 {
            return Err(PinError::Length {
                text: one_line(digits),
                chars: digits.chars().count(),
            });
        }
        let mut bytes = [0_u8; 32];
        hex::decode_to_slice(digits, &mut bytes).map_err(|_| PinError::NotHex(one_line(digits)))?;
        Ok(Self(bytes))
    }

    /// Whether `hex` (a digest as piton computes it) is this one.
    pub fn matches(&self, hex: &str) -> bool {
        Self::parse(hex).is_ok_and(|other| other == *self)
    }
}

impl std::fmt::Display for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl std::fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sha256({self})")
    }
}

/// What piton.toml pins: files of the plugins folder by file name, and tools by the
/// name they give themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    /// `[plugins."FILE.wasm"] sha256`, by file name.
    pub files: BTreeMap<String, Sha256>,
    /// `[tools.NAME] sha256`, by tool name.
    pub tools: BTreeMap<String, Sha256>,
}

impl Pins {
    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.tools.is_empty()
    }

    /// The pin of the plugins folder's file `file`, if any.
    pub fn file(&self, file: &Path) -> Option<Pin> {
        let name = file.file_name()?.to_str()?;
        let sha256 = *self.files.get(name)?;
        Some(Pin {
            sha256,
            section: file_section(name),
            by: PinnedBy::Config,
        })
    }

    /// The pin of the tool named `name`, if any.
    pub fn tool(&self, name: &str) -> Option<Pin> {
        let sha256 = *self.tools.get(name)?;
        Some(Pin {
            sha256,
            section: format!("[tools.{name}]"),
            by: PinnedBy::Config,
        })
    }
}

/// One pin: the digest, and the piton.toml section (or piton.lock entry) that gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The digest pinned.
    pub sha256: Sha256,
    /// The section as written in piton.toml: `[plugins."a.wasm"]`, `[tools.a]`; for
    /// a lock, the component's name.
    pub section: String,
    /// Which file pins it.
    pub by: PinnedBy,
}

/// Which file a [`Pin`] comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PinnedBy {
    /// piton.toml: the user's own pin.
    Config,
    /// piton.lock: what `piton add` recorded (see `crate::supply::lock`).
    Lock {
        /// The lock file.
        file: std::path::PathBuf,
        /// Where the component was added from.
        source: String,
    },
    /// A check piton made a moment before on bytes read from the same file (a
    /// signature verified at load, a fetch that hashed them): what is compiled must
    /// be those bytes.
    Checked {
        /// What checked them: "the signature beside it (FILE)", "the fetch".
        by: String,
    },
}

impl Pin {
    /// `Ok` when `actual` (the component's digest, in hex) is the one pinned; else
    /// the error that refuses `plugin`, naming both digests and the fix.
    pub fn check(&self, plugin: &ToolSource, actual: &str) -> Result<(), LoadError> {
        if self.sha256.matches(actual) {
            return Ok(());
        }
        let kind = match &self.by {
            PinnedBy::Config => LoadErrorKind::Pinned {
                section: self.section.clone(),
                pinned: self.sha256.to_string(),
                actual: actual.to_owned(),
            },
            PinnedBy::Lock { file, source } => LoadErrorKind::Locked(Box::new(LockedFile {
                lock: file.clone(),
                name: self.section.clone(),
                added_from: source.clone(),
                locked: self.sha256.to_string(),
                actual: actual.to_owned(),
            })),
            PinnedBy::Checked { by } => LoadErrorKind::Changed {
                by: by.clone(),
                checked: self.sha256.to_string(),
                actual: actual.to_owned(),
            },
        };
        Err(LoadError {
            plugin: plugin.clone(),
            kind,
        })
    }
}

/// The section that pins the plugins folder's file `name`: `[plugins."name"]`.
pub fn file_section(name: &str) -> String {
    format!("[plugins.{}]", toml_key(name))
}

/// `name` as a quoted TOML key.
fn toml_key(name: &str) -> String {
    let mut out = String::from("\"");
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` cut to 80 characters, for quoting a wrong value in one line.
fn one_line(text: &str) -> String {
    text.chars().take(80).collect()
}

const HOW: &str = "write the 64 hexadecimal digits that `piton inspect NAME` prints \
                   (or `sha256sum FILE`), such as sha256 = \"9f86d081884c7d65…\"";

/// A pin in piton.toml that cannot be used: a malformed digest, or a
/// `[plugins."FILE.wasm"]` section that names no file or pins nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// Not 64 characters long: what was written (its first 80 characters) and its
    /// length.
    #[error(
        "{text:?} is {chars} characters, not the 64 hexadecimal digits of a SHA-256; {how}",
        how = HOW
    )]
    Length {
        /// What was written, cut to 80 characters.
        text: String,
        /// How many characters it has.
        chars: usize,
    },
    /// 64 characters, not all hexadecimal digits (cut to 80 characters).
    #[error("{0:?} is not hexadecimal (only 0-9 and a-f); {how}", how = HOW)]
    NotHex(String),
    /// A `[plugins."…"]` section whose name is not a `.wasm` file name alone.
    #[error(
        "a pin names a file of the plugins folder by its file name alone, ending in .wasm, \
         such as [plugins.\"word_count.wasm\"] (piton loads only the .wasm files directly in \
         that folder)"
    )]
    FileName,
    /// A `[plugins."FILE.wasm"]` section without `sha256`.
    #[error(
        "is missing: a [plugins.\"FILE.wasm\"] section pins the file; write sha256 = \"…\" \
         with the digest `piton inspect` prints, or remove the section"
    )]
    Missing,
}

/// A `[plugins."FILE.wasm"]` section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlugin {
    sha256: Option<String>,
}

/// On error: the key (`plugins."a.wasm".sha256`) and what is wrong with it.
type KeyError = (String, PinError);

/// The file pins of the `[plugins."FILE.wasm"]` sections, by file name.
pub(crate) fn parse_files(
    raw: BTreeMap<String, RawPlugin>,
) -> Result<BTreeMap<String, Sha256>, KeyError> {
    let mut files = BTreeMap::new();
    for (name, section) in raw {
        let key = format!("plugins.{}", toml_key(&name));
        let path = Path::new(&name);
        let plain = path.file_name().is_some_and(|f| f == path.as_os_str())
            && path.extension().is_some_and(|e| e == "wasm");
        if !plain {
            return Err((key, PinError::FileName));
        }
        let Some(text) = section.sha256 else {
            return Err((format!("{key}.sha256"), PinError::Missing));
        };
        let sha256 = Sha256::parse(&text).map_err(|e| (format!("{key}.sha256"), e))?;
        files.insert(name, sha256);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn a_digest_parses_in_either_case_and_prints_in_lower_case() {
        let lower = Sha256::parse(DIGEST).expect("parses");
        let upper = Sha256::parse(&DIGEST.to_uppercase()).expect("parses");
        assert_eq!(lower, upper);
        assert_eq!(lower.to_string(), DIGEST);
        assert!(lower.matches(DIGEST));
        assert!(lower.matches(&DIGEST.to_uppercase()));
        assert!(!lower.matches(&DIGEST.replace('9', "8")));
        assert!(!lower.matches("not a digest"));
    }

    #[test]
    fn a_malformed_digest_says_what_to_write() {
        let length = |text: &str| PinError::Length {
            text: text.to_owned(),
            chars: text.len(),
        };
        let long = format!("{DIGEST}0");
        let prefixed = format!("sha256:{}", &DIGEST[7..]);
        let not_hex = DIGEST.replace('9', "g");
        for (text, expected) in [
            ("", length("")),
            ("abc", length("abc")),
            (&DIGEST[..63], length(&DIGEST[..63])),
            (&long, length(&long)),
            (&prefixed, PinError::NotHex(prefixed.clone())),
            (&not_hex, PinError::NotHex(not_hex.clone())),
        ] {
            assert_eq!(Sha256::parse(text), Err(expected), "{text}");
        }
        assert_eq!(
            length("abc").to_string(),
            "\"abc\" is 3 characters, not the 64 hexadecimal digits of a SHA-256; write the 64 \
             hexadecimal digits that `piton inspect NAME` prints (or `sha256sum FILE`), such as \
             sha256 = \"9f86d081884c7d65…\""
        );
        let shown = PinError::NotHex(not_hex.clone()).to_string();
        assert!(shown.contains("not hexadecimal"), "{shown}");
        assert!(shown.contains("piton inspect"), "{shown}");
    }

    #[test]
    fn a_mismatch_names_the_section_and_both_digests() {
        let pin = Pins {
            files: [("a.wasm".to_owned(), Sha256::parse(DIGEST).expect("parses"))].into(),
            tools: BTreeMap::new(),
        }
        .file(Path::new("/plugins/a.wasm"))
        .expect("pinned");
        let source = ToolSource::File("/plugins/a.wasm".into());
        assert!(pin.check(&source, DIGEST).is_ok());
        let other = "0".repeat(64);
        let error = pin.check(&source, &other).expect_err("refused").to_string();
        assert!(error.starts_with("/plugins/a.wasm: "), "{error}");
        assert!(error.contains("[plugins.\"a.wasm\"]"), "{error}");
        assert!(error.contains(DIGEST) && error.contains(&other), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn a_file_pin_names_a_wasm_file_by_its_name_and_gives_a_digest() {
        let raw = |name: &str, sha256: Option<&str>| {
            [(
                name.to_owned(),
                RawPlugin {
                    sha256: sha256.map(str::to_owned),
                },
            )]
            .into()
        };
        let files = parse_files(raw("a.wasm", Some(DIGEST))).expect("parses");
        assert_eq!(files["a.wasm"].to_string(), DIGEST);
        let short = PinError::Length {
            text: "12".into(),
            chars: 2,
        };
        for (name, sha256, key, expected) in [
            (
                "sub/a.wasm",
                Some(DIGEST),
                "plugins.\"sub/a.wasm\"",
                PinError::FileName,
            ),
            (
                "a.txt",
                Some(DIGEST),
                "plugins.\"a.txt\"",
                PinError::FileName,
            ),
            ("..", Some(DIGEST), "plugins.\"..\"", PinError::FileName),
            (
                "a.wasm",
                None,
                "plugins.\"a.wasm\".sha256",
                PinError::Missing,
            ),
            ("a.wasm", Some("12"), "plugins.\"a.wasm\".sha256", short),
        ] {
            let got = parse_files(raw(name, sha256)).expect_err(name);
            assert_eq!(got, (key.to_owned(), expected), "{name}");
        }
        let shown = PinError::FileName.to_string();
        assert!(
            shown.contains("file name alone, ending in .wasm"),
            "{shown}"
        );
        assert!(PinError::Missing.to_string().starts_with("is missing"));
    }
}
