//! The permission diff between two versions of a component: what the new one may do
//! that the old could not, and the rest, each difference classified.
//!
//! | difference | class |
//! | --- | --- |
//! | a tool added | weaker |
//! | a tool removed | stronger |
//! | read_only true → false, destructive false → true, idempotent true → false, open_world false → true | weaker (a call may now do more) |
//! | the opposite hint changes | stronger |
//! | `hints-for` appears / goes | weaker (a call can claim narrower hints, which piton asks about less) / stronger |
//! | a new import of files, network or environment (or one piton does not know) | weaker |
//! | such an import dropped | stronger |
//! | an input schema changed | schema |
//! | a description, the parallel flag, the world, a harmless import | minor |
//!
//! `piton update --yes` takes no weaker change unless `--allow-weaker` is given:
//! [`PermissionDiff::weakenings`].

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use piton_wit::Hint;

use super::capability::ImportKind;
use super::profile::{Profile, ToolProfile, hint_words};
use super::schema_diff::{self, SchemaChange};
use crate::term::{cut_end, escape};

/// The most characters of a description a change shows.
const DESCRIPTION_SHOWN: usize = 60;

/// How one difference bears on what the component may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The new version may do more: never taken silently.
    Weaker,
    /// The new version may do less.
    Stronger,
    /// A tool takes other arguments.
    Schema,
    /// Nothing it may do changed.
    Minor,
}

impl Class {
    /// `weaker`, `stronger`, `schema` or `minor`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Weaker => "weaker",
            Self::Stronger => "stronger",
            Self::Schema => "schema",
            Self::Minor => "minor",
        }
    }
}

/// One difference between two profiles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum Change {
    /// A tool the old version did not have.
    ToolAdded {
        /// Its name.
        tool: String,
        /// Its hints, shown as words.
        hints: String,
        /// Whether it has `hints-for`.
        hints_for: bool,
    },
    /// A tool the new version no longer has.
    ToolRemoved {
        /// Its name.
        tool: String,
    },
    /// One hint of a tool changed.
    Hint {
        /// The tool.
        tool: String,
        /// The hint.
        #[serde(serialize_with = "hint_name")]
        hint: Hint,
        /// Its new value (the old one is the opposite).
        now: bool,
    },
    /// A tool's `hints-for` appeared (`now`) or went.
    HintsFor {
        /// The tool.
        tool: String,
        /// Whether the new version has it.
        now: bool,
    },
    /// Interfaces imported now and not before, of one kind.
    ImportsAdded {
        /// What they are.
        kind: ImportKind,
        /// The interfaces, without versions.
        interfaces: Vec<String>,
        /// Whether the old version imported nothing of this kind.
        first: bool,
    },
    /// Interfaces no longer imported, of one kind.
    ImportsDropped {
        /// What they are.
        kind: ImportKind,
        /// The interfaces, without versions.
        interfaces: Vec<String>,
        /// Whether the new version imports nothing of this kind.
        last: bool,
    },
    /// A tool's input schema changed.
    Schema {
        /// The tool.
        tool: String,
        /// What changed.
        changes: Vec<SchemaChange>,
    },
    /// A tool's description changed.
    Description {
        /// The tool.
        tool: String,
        /// The old description.
        old: String,
        /// The new one.
        new: String,
    },
    /// Whether a tool's calls may run in parallel changed.
    Parallel {
        /// The tool.
        tool: String,
        /// The new value.
        now: bool,
    },
    /// The piton world the component exports changed (`plugin`, `toolbox-plugin`).
    World {
        /// The old one.
        old: String,
        /// The new one.
        new: String,
    },
}

fn hint_name<S: serde::Serializer>(hint: &Hint, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(hint.name())
}

impl Change {
    /// How it bears on what the component may do; see the module's table.
    pub fn class(&self) -> Class {
        let weaker_if = |weaker: bool| {
            if weaker {
                Class::Weaker
            } else {
                Class::Stronger
            }
        };
        let matters = |kind: &ImportKind| !matches!(kind, ImportKind::Harmless);
        match self {
            Self::ToolAdded { .. } => Class::Weaker,
            Self::ToolRemoved { .. } => Class::Stronger,
            Self::Hint { hint, now, .. } => weaker_if(match hint {
                Hint::ReadOnly | Hint::Idempotent => !now,
                Hint::Destructive | Hint::OpenWorld => *now,
            }),
            Self::HintsFor { now, .. } => weaker_if(*now),
            Self::ImportsAdded { kind, .. } if matters(kind) => Class::Weaker,
            Self::ImportsDropped { kind, .. } if matters(kind) => Class::Stronger,
            Self::Schema { .. } => Class::Schema,
            Self::ImportsAdded { .. }
            | Self::ImportsDropped { .. }
            | Self::Description { .. }
            | Self::Parallel { .. }
            | Self::World { .. } => Class::Minor,
        }
    }
}

impl fmt::Display for Change {
    /// One line, without its class: `tool lookup: read_only true → false: it may now
    /// change things`. Text from the component is escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = |text: &str| escape(text, false).into_owned();
        match self {
            Self::ToolAdded {
                tool,
                hints,
                hints_for,
            } => {
                let with = if *hints_for { ", with hints-for" } else { "" };
                write!(f, "new tool {}: {hints}{with}", e(tool))
            }
            Self::ToolRemoved { tool } => write!(f, "tool {} removed", e(tool)),
            Self::Hint { tool, hint, now } => {
                let meaning = match (hint, now) {
                    (Hint::ReadOnly, false) => "it may now change things",
                    (Hint::ReadOnly, true) => "it now only reads",
                    (Hint::Destructive, true) => "it may now delete or overwrite",
                    (Hint::Destructive, false) => "it no longer deletes or overwrites",
                    (Hint::Idempotent, false) => "a repeated call may now do more",
                    (Hint::Idempotent, true) => "a repeated call now does nothing more",
                    (Hint::OpenWorld, true) => "it may now reach outside (granted hosts)",
                    (Hint::OpenWorld, false) => "it no longer reaches outside",
                };
                write!(f, "tool {}: {hint} {} → {now}: {meaning}", e(tool), !now)
            }
            Self::HintsFor { tool, now: true } => write!(
                f,
                "tool {}: hints-for added: a call may claim narrower hints",
                e(tool)
            ),
            Self::HintsFor { tool, now: false } => {
                write!(f, "tool {}: hints-for removed", e(tool))
            }
            Self::ImportsAdded {
                kind,
                interfaces,
                first,
            } => {
                let list: Vec<_> = interfaces.iter().map(|i| e(i)).collect();
                let first = if *first { " (new capability)" } else { "" };
                write!(f, "{}: now imports {}{first}", kind.name(), list.join(", "))
            }
            Self::ImportsDropped {
                kind,
                interfaces,
                last,
            } => {
                let list: Vec<_> = interfaces.iter().map(|i| e(i)).collect();
                let last = if *last { " (none left)" } else { "" };
                write!(
                    f,
                    "{}: no longer imports {}{last}",
                    kind.name(),
                    list.join(", ")
                )
            }
            Self::Schema { tool, changes } => {
                let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
                write!(f, "tool {}: input {}", e(tool), list.join("; "))
            }
            Self::Description { tool, old, new } => {
                let short = |text: &str| {
                    let first = e(text.lines().next().unwrap_or_default());
                    cut_end(&first, DESCRIPTION_SHOWN).into_owned()
                };
                write!(
                    f,
                    "tool {}: description {:?} → {:?}",
                    e(tool),
                    short(old),
                    short(new)
                )
            }
            Self::Parallel { tool, now } => {
                write!(f, "tool {}: parallel {} → {now}", e(tool), !now)
            }
            Self::World { old, new } => write!(f, "world {} → {}", e(old), e(new)),
        }
    }
}

/// Every difference between two versions of a component, weaker ones first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PermissionDiff {
    /// The new version's file (or name).
    pub file: PathBuf,
    /// The old version's SHA-256.
    pub old_sha256: String,
    /// The new version's SHA-256.
    pub new_sha256: String,
    /// The differences, by class (weaker first), then tool by tool.
    pub changes: Vec<Change>,
}

impl PermissionDiff {
    /// No difference at all (the bytes may still differ).
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The weaker changes: what `--yes` must not take without `--allow-weaker`.
    pub fn weakenings(&self) -> impl Iterator<Item = &Change> {
        self.of_class(Class::Weaker)
    }

    /// Whether any change is weaker.
    pub fn has_weakenings(&self) -> bool {
        self.weakenings().next().is_some()
    }

    /// The changes of `class`.
    pub fn of_class(&self, class: Class) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.class() == class)
    }
}

/// What changed from the profile `old` to `new`.
pub fn diff(old: &Profile, new: &Profile) -> PermissionDiff {
    let mut changes = Vec::new();
    if old.world != new.world {
        changes.push(Change::World {
            old: old.world.clone(),
            new: new.world.clone(),
        });
    }
    for tool in &new.tools {
        match old.tool(&tool.name) {
            None => changes.push(Change::ToolAdded {
                tool: tool.name.clone(),
                hints: hint_words(tool.hints),
                hints_for: tool.hints_for,
            }),
            Some(before) => tool_changes(before, tool, &mut changes),
        }
    }
    for tool in &old.tools {
        if new.tool(&tool.name).is_none() {
            changes.push(Change::ToolRemoved {
                tool: tool.name.clone(),
            });
        }
    }
    import_changes(old, new, &mut changes);
    // Stable: within a class, the order above.
    changes.sort_by_key(Change::class);
    PermissionDiff {
        file: new.file.clone(),
        old_sha256: old.sha256.clone(),
        new_sha256: new.sha256.clone(),
        changes,
    }
}

fn tool_changes(old: &ToolProfile, new: &ToolProfile, changes: &mut Vec<Change>) {
    let tool = || new.name.clone();
    for hint in Hint::ALL {
        let now = new.hints.get(hint);
        if old.hints.get(hint) != now {
            changes.push(Change::Hint {
                tool: tool(),
                hint,
                now,
            });
        }
    }
    if old.hints_for != new.hints_for {
        changes.push(Change::HintsFor {
            tool: tool(),
            now: new.hints_for,
        });
    }
    let schema = schema_diff::diff(&old.input_schema, &new.input_schema);
    if !schema.is_empty() {
        changes.push(Change::Schema {
            tool: tool(),
            changes: schema,
        });
    }
    if old.description != new.description {
        changes.push(Change::Description {
            tool: tool(),
            old: old.description.clone(),
            new: new.description.clone(),
        });
    }
    if old.parallel != new.parallel {
        changes.push(Change::Parallel {
            tool: tool(),
            now: new.parallel,
        });
    }
}

fn import_changes(old: &Profile, new: &Profile, changes: &mut Vec<Change>) {
    let kinds: BTreeSet<ImportKind> = (old.imports.iter().chain(new.imports.iter()))
        .map(|(kind, _)| kind)
        .collect();
    for kind in kinds {
        let before: BTreeSet<&str> = old.imports.of_kind(kind).collect();
        let after: BTreeSet<&str> = new.imports.of_kind(kind).collect();
        let added: Vec<String> = after.difference(&before).map(|i| (*i).to_owned()).collect();
        if !added.is_empty() {
            changes.push(Change::ImportsAdded {
                kind,
                interfaces: added,
                first: before.is_empty(),
            });
        }
        let dropped: Vec<String> = before.difference(&after).map(|i| (*i).to_owned()).collect();
        if !dropped.is_empty() {
            changes.push(Change::ImportsDropped {
                kind,
                interfaces: dropped,
                last: after.is_empty(),
            });
        }
    }
}

impl fmt::Display for PermissionDiff {
    /// A header naming the file, both digests and the count of weaker changes, then
    /// one line per change with its class.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |sha: &str| sha.get(..16).unwrap_or(sha).to_owned();
        write!(
            f,
            "{}: sha256 {} → {}: ",
            escape(&self.file.display().to_string(), false),
            short(&self.old_sha256),
            short(&self.new_sha256)
        )?;
        if self.is_empty() {
            return writeln!(f, "no permission change");
        }
        let count = self.changes.len();
        let weaker = self.weakenings().count();
        writeln!(
            f,
            "{count} change{}, {weaker} weaker",
            if count == 1 { "" } else { "s" }
        )?;
        for change in &self.changes {
            let class = change.class();
            let mark = if class == Class::Weaker { '!' } else { ' ' };
            writeln!(f, "  {mark} {:<9} {change}", class.name())?;
        }
        Ok(())
    }
}
