//! `piton remove NAME`: deletes a component `piton add` put in the plugins folder,
//! and its piton.lock entry.

use std::io::{self, Write};

use super::add::place;
use super::load::PluginsArg;
use super::out::{Outcome, say};
use crate::supply::add::{AddError, remove as remove_component};

pub(super) fn remove(name: &str, plugins: PluginsArg) -> io::Result<Outcome> {
    let place = match place(plugins) {
        Ok(place) => place,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
    };
    match remove_component(&place.folder, &place.lock, name) {
        Ok(entry) => {
            writeln!(
                io::stdout().lock(),
                "removed {name}: {} (added from {})",
                place.folder.join(&entry.file).display(),
                entry.source
            )?;
            Ok(Outcome::Success)
        }
        Err(e) => {
            say(format_args!("error: {e}"));
            Ok(match e {
                AddError::NotAdded { .. } => Outcome::Usage,
                _ => Outcome::ErrorResult,
            })
        }
    }
}
