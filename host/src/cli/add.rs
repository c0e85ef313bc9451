//! `piton add REF`: fetch a component into the plugins folder, check it as `piton
//! check` does, record it in piton.lock, and print its tools; see
//! [`crate::supply::add`].

use std::io::{self, Write};
use std::path::PathBuf;

use super::load::PluginsArg;
use super::out::{Outcome, say};
use crate::config::Config;
use crate::config::pins::Sha256;
use crate::limits::format_size;
use crate::plugins::PluginsAt;
use crate::supply::add::{Add, AddError};
use crate::supply::fetched::FetchLimits;
use crate::supply::lock::lock_file;
use crate::supply::profile::Profile;
use crate::supply::reference::Reference;
use crate::term::Shown;
use crate::wasm::{RuntimeConfig, WasmRuntime};

/// Where `add` and `remove` work: the plugins folder, piton.toml's settings, the lock.
pub(super) struct Place {
    pub(super) folder: PathBuf,
    pub(super) config: Config,
    pub(super) lock: PathBuf,
}

impl Place {
    /// How to add into this place: piton.toml's `[supply]` limits and `[trust]`
    /// policy, on a runtime of its own; the outcome to exit with if there is none.
    pub(super) fn adder(&self) -> Result<Add, Outcome> {
        let runtime = WasmRuntime::new(RuntimeConfig::default()).map_err(|e| {
            eprintln!("error: {e}");
            Outcome::Stopped
        })?;
        let limits = FetchLimits {
            max_size: self.config.supply.max_size,
        };
        let trust = self.config.trust.clone();
        Ok(Add::new(runtime, self.folder.clone(), self.lock.clone(), trust).with_limits(limits))
    }
}

/// The plugins folder of `arg` (`./plugins` when none is named or found, made if
/// missing), piton.toml as the other commands find it, and the lock beside it.
pub(super) fn place(arg: PluginsArg) -> Result<Place, String> {
    let at = PluginsAt::resolve(arg.plugins);
    let folder = match &at {
        PluginsAt::Folder(folder) => folder.clone(),
        PluginsAt::Bundled => PathBuf::from("plugins"),
    };
    std::fs::create_dir_all(&folder)
        .map_err(|e| format!("cannot make the plugins folder {}: {e}", folder.display()))?;
    let file = PluginsAt::Folder(folder.clone()).config_file(arg.config);
    let config = match &file {
        Some(file) => Config::load(file).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    let lock =
        lock_file(file.as_deref(), Some(&folder)).unwrap_or_else(|| folder.join("piton.lock"));
    Ok(Place {
        folder,
        config,
        lock,
    })
}

/// `piton add`'s flags.
pub(super) struct AddArgs {
    pub(super) reference: String,
    pub(super) name: Option<String>,
    pub(super) sha256: Option<String>,
    pub(super) force: bool,
    pub(super) signature: Option<String>,
    pub(super) plugins: PluginsArg,
}

pub(super) async fn add(mut args: AddArgs) -> io::Result<Outcome> {
    let place = match place(args.plugins) {
        Ok(place) => place,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
    };
    // Under `require = "any"` a URL may come without --sha256.
    let require = place.config.trust.rule_for(&args.reference).require;
    let reference = match Reference::parse_under(&args.reference, args.sha256.as_deref(), require) {
        Ok(reference) => reference,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
    };
    // A local file is recorded by its absolute path: `piton update` may run from
    // another folder.
    if let Reference::Path(path) = &reference
        && let Ok(absolute) = std::path::absolute(path)
        && let Some(text) = absolute.to_str()
    {
        args.reference = text.to_owned();
    }
    // For a URL, --sha256 is checked as part of the fetch; for the others, after it.
    let expected = match (&reference, &args.sha256) {
        (Reference::Url { .. }, _) | (_, None) => None,
        (_, Some(text)) => Sha256::parse(text).ok(),
    };
    let adding = match place.adder() {
        Ok(adding) => adding,
        Err(outcome) => return Ok(outcome),
    };
    let adding = adding.with_force(args.force).with_signature(args.signature);
    let added = match adding
        .run(&reference, &args.reference, expected, args.name.as_deref())
        .await
    {
        Ok(added) => added,
        Err(e) => {
            say(format_args!("error: {e}"));
            return Ok(match e {
                AddError::Ref(_) | AddError::Name { .. } => Outcome::Usage,
                _ => Outcome::ErrorResult,
            });
        }
    };
    let shown = Shown::stdout();
    let mut out = io::stdout().lock();
    let file = place.folder.join(&added.entry.file);
    let size = added.checked.tools.first().map(|t| t.info().size);
    writeln!(
        out,
        "added {} from {}",
        added.name,
        shown.cell(&added.entry.source)
    )?;
    writeln!(
        out,
        "  file:     {}{}{}",
        shown.cell(&file.display().to_string()),
        size.map_or_else(String::new, |size| format!(" ({})", format_size(size))),
        if added.replaced { ", replaced" } else { "" }
    )?;
    let unpinned = matches!(reference, Reference::Url { sha256: None, .. });
    writeln!(
        out,
        "  digest:   {}{}",
        added.entry.digest,
        if unpinned {
            " (what the URL served: no --sha256 was given, and [trust] require = \"any\" \
             takes it)"
        } else {
            ""
        }
    )?;
    if let Some(resolved) = &added.entry.resolved {
        writeln!(out, "  manifest: {resolved}")?;
    }
    writeln!(
        out,
        "  signed:   {}",
        added
            .entry
            .signer
            .as_deref()
            .unwrap_or("no (piton.toml's [trust] requires no signature for it)")
    )?;
    writeln!(
        out,
        "  recorded in {}",
        shown.cell(&place.lock.display().to_string())
    )?;
    // What it may do, and what piton.toml grants it of that.
    let profile = Profile::of_checked(&file, &added.checked);
    let granted = profile.granted(&place.config);
    write!(out, "{}", profile.show(Some(&granted)))?;
    Ok(Outcome::Success)
}
