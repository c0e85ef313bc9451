//! Watching a plugins folder: the `*.wasm` files and piton.toml in it, and the config
//! file wherever it is, reloading the registry when they change.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use crate::registry::Registry;
use crate::serve::Served;

/// The files whose changes reload the registry: the `*.wasm` files and
/// `piton.toml` in a folder, and any other files named (the config file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    /// The plugins folder.
    pub folder: PathBuf,
    /// More files, watched whether or not they exist yet.
    pub files: Vec<PathBuf>,
}

/// What a file looked like at one poll; `None` when it is missing.
type Fingerprint = BTreeMap<PathBuf, Option<Stamp>>;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Catches a file replaced by another of the same size and time (`mv`, `cp -p`).
    inode: u64,
}

impl Watched {
    fn fingerprint(&self) -> Fingerprint {
        let mut files = Fingerprint::new();
        // An unreadable folder has no files; the reload then says why it failed.
        if let Ok(entries) = std::fs::read_dir(&self.folder) {
            for entry in entries.flatten() {
                let path = entry.path();
                let watched = path.extension().is_some_and(|ext| ext == "wasm")
                    || path.file_name().is_some_and(|name| name == "piton.toml");
                if watched {
                    let stamp = stamp(&path);
                    files.insert(path, stamp);
                }
            }
        }
        for file in &self.files {
            files.insert(file.clone(), stamp(file));
        }
        files
    }
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

async fn fingerprint(watched: &Arc<Watched>) -> Fingerprint {
    let watched = watched.clone();
    tokio::task::spawn_blocking(move || watched.fingerprint())
        .await
        .unwrap_or_default()
}

/// Watches a plugins folder for [`Served`]: polls the files and reloads the
/// registry when they change.
#[derive(Debug)]
pub struct FolderWatch {
    watched: Arc<Watched>,
    /// The files as the registry served now was loaded from them.
    loaded: Fingerprint,
}

impl FolderWatch {
    /// Takes the files' state now. Call it before loading the registry it watches
    /// for, so that a change made while it loads is still seen.
    pub fn start(watched: Watched) -> Self {
        let loaded = watched.fingerprint();
        Self {
            watched: Arc::new(watched),
            loaded,
        }
    }

    /// Polls every `every` and, once the files changed and then held still for one
    /// more poll (so a file still being copied is not loaded half-written), calls
    /// `reload` and serves what it returns. `None` (the folder or the config could
    /// not be loaded at all; `reload` says why) keeps the registry served now, until
    /// the files change again.
    ///
    /// Runs until the last strong reference to `served` is dropped.
    pub async fn run<F, Fut>(self, served: Weak<Served>, every: Duration, mut reload: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<Registry>>,
    {
        let Self {
            watched,
            mut loaded,
        } = self;
        let mut last = loaded.clone();
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if served.strong_count() == 0 {
                return;
            }
            let now = fingerprint(&watched).await;
            if now == last && now != loaded {
                let folder = watched.folder.display();
                tracing::info!(%folder, "the plugins changed: reloading");
                let registry = reload().await;
                let Some(served) = served.upgrade() else {
                    return;
                };
                match registry {
                    Some(registry) => {
                        tracing::info!(%folder, tools = registry.len(), "reloaded the plugins");
                        served.replace(registry);
                    }
                    None => tracing::warn!(
                        %folder,
                        "the plugins changed but could not be loaded; still serving the tools \
                         loaded before"
                    ),
                }
                loaded = now.clone();
            }
            last = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const EVERY: Duration = Duration::from_millis(20);

    /// Waits until `served` reaches `generation`, or fails after 5 s.
    async fn reaches(served: &Served, generation: u64) {
        let mut changes = served.changes();
        tokio::time::timeout(
            Duration::from_secs(5),
            changes.wait_for(|g| *g >= generation),
        )
        .await
        .expect("the change arrives in time")
        .expect("the sender lives");
    }

    #[tokio::test]
    async fn a_changed_file_reloads_once_and_a_failed_reload_keeps_the_registry() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("elsewhere.toml");
        let served = Served::new(Registry::new());
        let reloads = Arc::new(AtomicUsize::new(0));
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watched = Watched {
            folder: dir.path().to_path_buf(),
            files: vec![config.clone()],
        };
        let watcher = {
            let (served, reloads, fail) = (Arc::downgrade(&served), reloads.clone(), fail.clone());
            let watch = FolderWatch::start(watched);
            tokio::spawn(async move {
                watch
                    .run(served, EVERY, move || {
                        reloads.fetch_add(1, Ordering::SeqCst);
                        let fail = fail.load(Ordering::SeqCst);
                        async move { (!fail).then(Registry::new) }
                    })
                    .await;
            })
        };
        // Other files are not watched.
        std::fs::write(dir.path().join("notes.txt"), "x").expect("write");
        tokio::time::sleep(EVERY * 5).await;
        assert_eq!(reloads.load(Ordering::SeqCst), 0);

        std::fs::write(dir.path().join("a.wasm"), "x").expect("write");
        reaches(&served, 1).await;
        tokio::time::sleep(EVERY * 5).await;
        assert_eq!(reloads.load(Ordering::SeqCst), 1, "one reload per change");

        // The config file outside the folder counts too: it appears.
        std::fs::write(&config, "").expect("write");
        reaches(&served, 2).await;

        fail.store(true, Ordering::SeqCst);
        let kept = served.registry();
        std::fs::remove_file(dir.path().join("a.wasm")).expect("remove");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while reloads.load(Ordering::SeqCst) < 3 {
            assert!(tokio::time::Instant::now() < deadline, "no reload");
            tokio::time::sleep(EVERY).await;
        }
        tokio::time::sleep(EVERY * 5).await;
        assert!(
            Arc::ptr_eq(&kept, &served.registry()),
            "a failed reload swapped"
        );
        assert_eq!(served.generation(), 2);
        assert_eq!(
            reloads.load(Ordering::SeqCst),
            3,
            "no retry until the next change"
        );

        drop(served);
        tokio::time::timeout(Duration::from_secs(5), watcher)
            .await
            .expect("the watcher ends with the served registry")
            .expect("no panic");
    }
}
