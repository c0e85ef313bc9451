//! `piton update [NAME]`: fetch each added component's source again, and for a new
//! version show its permission diff and ask before replacing the file; see
//! [`crate::supply::update`].

use std::io::{self, BufRead as _, IsTerminal as _, Write};

use super::add::place;
use super::load::PluginsArg;
use super::out::{Outcome, say};
use crate::supply::lock::Lock;
use crate::supply::update::{Consent, Decision, Found, check};
use crate::term::Shown;

/// `piton update`'s flags.
pub(super) struct UpdateArgs {
    pub(super) name: Option<String>,
    pub(super) sha256: Option<String>,
    pub(super) consent: Consent,
    pub(super) plugins: PluginsArg,
}

pub(super) async fn update(args: UpdateArgs) -> io::Result<Outcome> {
    let place = match place(args.plugins) {
        Ok(place) => place,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
    };
    let lock = match Lock::load(&place.lock) {
        Ok(lock) => lock,
        Err(e) => {
            say(format_args!("error: {e}"));
            return Ok(Outcome::ErrorResult);
        }
    };
    let names: Vec<String> = match &args.name {
        Some(name) if !lock.components.contains_key(name) => {
            say(format_args!(
                "error: {} records no component named {name}; `piton list --sources` shows \
                 what was added",
                place.lock.display()
            ));
            return Ok(Outcome::Usage);
        }
        Some(name) => vec![name.clone()],
        None => lock.components.keys().cloned().collect(),
    };
    if names.is_empty() {
        println!(
            "nothing to update: {} records no component (`piton add REF` adds one)",
            place.lock.display()
        );
        return Ok(Outcome::Success);
    }
    let add = match place.adder() {
        Ok(add) => add,
        Err(outcome) => return Ok(outcome),
    };
    let mut outcome = Outcome::Success;
    let shown = Shown::stdout();
    for name in names {
        let Some(entry) = lock.components.get(&name) else {
            continue;
        };
        let found = check(&add, &name, entry, args.sha256.as_deref()).await;
        // Whether it may do more than before, and whether it loses its signer.
        let (fetched, signer, more, unsigned) = match found {
            Ok(Found::UpToDate) => {
                println!("{name}: up to date ({})", entry.digest);
                continue;
            }
            Ok(Found::Pinned(why)) => {
                println!("{name}: pinned ({}): {why}", entry.digest);
                continue;
            }
            Ok(Found::NewManifest(new)) => {
                let manifest = new.fetched.resolved.clone().unwrap_or_default();
                let was = entry.resolved.as_deref().unwrap_or("none");
                let line = format!(
                    "{name}: the same bytes ({}) under a new manifest, {manifest} (was {was})",
                    entry.digest
                );
                let Some(change) = &new.signer_change else {
                    // Nothing it may do changed, and the signer stays: recorded unasked.
                    match add.install(&name, new.fetched, &entry.source, new.signer) {
                        Ok(_) => println!("{line}: recorded"),
                        Err(e) => {
                            say(format_args!(
                                "error: {name}: {e}; the file in place is kept"
                            ));
                            outcome = Outcome::ErrorResult;
                        }
                    }
                    continue;
                };
                println!("{line}");
                println!("{change}");
                (new.fetched, new.signer, false, true)
            }
            Ok(Found::Changed(changed)) => {
                println!("{name}: a new version from {}", shown.cell(&entry.source));
                if let Some(why) = &changed.old_missing {
                    println!(
                        "  the file in place has no profile ({why}): every tool counts as new"
                    );
                }
                print!("{}", changed.diff);
                if let Some(change) = &changed.signer_change {
                    println!("{change}");
                }
                let more = changed.diff.has_weakenings();
                let unsigned = changed.signer_change.is_some();
                (changed.fetched, changed.signer, more, unsigned)
            }
            Err(e) => {
                say(format_args!(
                    "error: {name}: {e}; the file in place is kept"
                ));
                outcome = Outcome::ErrorResult;
                continue;
            }
        };
        let weakens = more || unsigned;
        let decision = match args.consent.settle(weakens) {
            Some(decision) => decision,
            None => ask(&name, weakens)?,
        };
        match decision {
            Decision::Take => {
                let new = fetched.digest();
                let manifest = fetched.resolved.clone();
                match add.install(&name, fetched, &entry.source, signer) {
                    Ok(_) if new == entry.digest => println!(
                        "{name}: recorded the new manifest {}",
                        manifest.as_deref().unwrap_or("none")
                    ),
                    Ok(_) => println!("{name}: updated {} → {new}", entry.digest),
                    Err(e) => {
                        say(format_args!(
                            "error: {name}: {e}; the file in place is kept"
                        ));
                        outcome = Outcome::ErrorResult;
                    }
                }
            }
            Decision::Keep => {
                let refused = weakens && args.consent.yes;
                let unasked = !args.consent.yes && !io::stdin().is_terminal();
                // A script's update that was not taken fails, so that it is seen.
                if refused || unasked {
                    outcome = Outcome::ErrorResult;
                }
                let why = match (refused, more, unsigned) {
                    (false, _, _) => "",
                    (true, true, false) => {
                        ": it may do more than before (the ! lines), which --yes does not \
                         take without --allow-weaker"
                    }
                    (true, false, _) => {
                        ": it loses the signer piton.lock records (the ! line), which --yes \
                         does not take without --allow-weaker"
                    }
                    (true, true, true) => {
                        ": it may do more than before and loses the signer piton.lock \
                         records (the ! lines), which --yes does not take without \
                         --allow-weaker"
                    }
                };
                println!("{name}: not updated, kept {}{why}", entry.digest);
            }
        }
    }
    Ok(outcome)
}

/// Asks on the terminal whether to take the update of `name` (`weakens`: it may do
/// more, or loses its signer); without a terminal, the answer is no (a script says
/// --yes).
fn ask(name: &str, weakens: bool) -> io::Result<Decision> {
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        println!(
            "  not asked: no terminal (pass --yes to take updates that weaken nothing, and \
             --allow-weaker for the others)"
        );
        return Ok(Decision::Keep);
    }
    let weaker = if weakens {
        "It may do more than before (the ! lines). "
    } else {
        ""
    };
    print!("{weaker}Replace {name}? [y/N] ");
    io::stdout().flush()?;
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Decision::Take,
        _ => Decision::Keep,
    })
}
