//! Watching a plugins folder: the `*.wasm` files (and the signature bundles beside
//! them, `*.wasm.sigstore.json`) and piton.toml in it, and the config
//! file wherever it is, through the `notify` crate (inotify, FSEvents, ...; its
//! polling watcher when those cannot start). [`FolderWatch::changed`] turns a burst of
//! file events into one change, once the files held still; what to do with it (reload)
//! is the caller's.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind, MetadataKind, ModifyKind};
use notify::{Event, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

/// How long the files must hold still after an event before a change is reported:
/// a file still being copied keeps sending events, so it is not loaded half-written.
const SETTLE: Duration = Duration::from_millis(300);

/// How often the fallback poller looks at the files. It sees a change only at its
/// next poll, so with it the files must hold still for one more poll than [`SETTLE`].
const POLL_EVERY: Duration = Duration::from_millis(500);

/// The files whose changes reload the registry: the `*.wasm` files and
/// `piton.toml` in a folder, and any other files named (the config file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    /// The plugins folder.
    pub folder: PathBuf,
    /// More files, watched whether or not they exist yet.
    pub files: Vec<PathBuf>,
}

/// Which event paths are a change: the folders as watched (resolved, as the
/// watchers report paths), and the files named in them.
#[derive(Debug)]
struct Filter {
    /// The plugins folder: its `*.wasm` files and piton.toml.
    folder: PathBuf,
    /// The extra files, as (folder, file name).
    files: Vec<(PathBuf, OsString)>,
    /// Where the watched files that are symbolic links lead, as (folder, file name):
    /// a change there is a change of the file. Found again after each change.
    targets: Mutex<Vec<(PathBuf, OsString)>>,
}

impl Filter {
    fn new(watched: &Watched) -> Self {
        let files = watched
            .files
            .iter()
            .filter_map(|file| {
                let name = file.file_name()?.to_os_string();
                let parent = match file.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
                Some((resolved(parent), name))
            })
            .collect();
        Self {
            folder: resolved(&watched.folder),
            files,
            targets: Mutex::default(),
        }
    }

    /// The folders to watch for the folder and the extra files, each once.
    fn folders(&self) -> Vec<PathBuf> {
        let mut folders = vec![self.folder.clone()];
        for (folder, _) in &self.files {
            if !folders.contains(folder) {
                folders.push(folder.clone());
            }
        }
        folders
    }

    /// Whether `name` in the plugins folder is one of its watched files: a component,
    /// the signature bundle beside one (whether it verifies decides the load), or
    /// piton.toml.
    fn is_plugin_file(name: &OsStr) -> bool {
        let bundle = name
            .to_str()
            .is_some_and(|name| name.ends_with(".wasm.sigstore.json"));
        Path::new(name).extension().is_some_and(|ext| ext == "wasm")
            || bundle
            || name == "piton.toml"
    }

    /// The watched files now: those of the folder, and the extra files.
    fn watched_files(&self) -> Vec<PathBuf> {
        // An unreadable folder has no files; the reload then says why it failed.
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| Self::is_plugin_file(&entry.file_name()))
            .map(|entry| entry.path())
            .collect();
        files.extend(self.files.iter().map(|(folder, name)| folder.join(name)));
        files
    }

    /// Finds where the watched files that are symbolic links lead now; returns the
    /// folders that hold them.
    fn follow_links(&self) -> Vec<PathBuf> {
        let targets: Vec<(PathBuf, OsString)> = self
            .watched_files()
            .into_iter()
            .filter(|file| file.symlink_metadata().is_ok_and(|m| m.is_symlink()))
            .filter_map(|link| {
                let target = std::fs::canonicalize(link).ok()?;
                Some((
                    target.parent()?.to_path_buf(),
                    target.file_name()?.to_owned(),
                ))
            })
            .collect();
        let folders = targets.iter().map(|(folder, _)| folder.clone()).collect();
        *self.targets.lock().unwrap_or_else(PoisonError::into_inner) = targets;
        folders
    }

    /// Whether `path` is a watched file (or where one leads), or a watched folder
    /// itself (moved away, removed, made again).
    fn matches(&self, path: &Path) -> bool {
        if self.folders().iter().any(|folder| folder == path) {
            return true;
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let named = |(folder, file): &(PathBuf, OsString)| folder == parent && file == name;
        (parent == self.folder && Self::is_plugin_file(name))
            || self.files.iter().any(named)
            || self
                .targets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(named)
    }

    /// Whether `event` changes a watched file. Opening and reading are not changes
    /// (the reload reads the files); closing a file written to is.
    fn is_change(&self, event: &Event) -> bool {
        if event.need_rescan() {
            return true;
        }
        let changes = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
            EventKind::Any
            | EventKind::Create(_)
            | EventKind::Modify(_)
            | EventKind::Remove(_)
            | EventKind::Other => true,
        };
        changes && event.paths.iter().any(|path| self.matches(path))
    }
}

/// `path` with links and `..` resolved, as the watchers report it. A path that does
/// not exist (yet) keeps its missing part as given, under its nearest resolved
/// ancestor.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(path) = std::fs::canonicalize(path) {
        return path;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    while let Some(parent) = at.parent() {
        if let Some(name) = at.file_name() {
            rest.push(name.to_owned());
        }
        if let Ok(found) = std::fs::canonicalize(parent) {
            return rest.iter().rev().fold(found, |path, name| path.join(name));
        }
        at = parent;
    }
    absolute
}

/// Watches a plugins folder ([`Watched`]) and says when its files changed.
#[derive(Debug)]
pub struct FolderWatch {
    /// One message (at most one waiting) per batch of events; closed when watching
    /// ended. `None` when no watcher could start.
    changes: Option<mpsc::Receiver<()>>,
    /// Dropping it stops watching. `None` when none could start.
    watcher: Option<AnyWatcher>,
    filter: Arc<Filter>,
    /// The folders watched so far.
    folders: Vec<PathBuf>,
    /// How long the files must hold still: [`SETTLE`], plus a poll when polling.
    settle: Duration,
}

/// The watcher that started.
#[derive(Debug)]
enum AnyWatcher {
    Native(RecommendedWatcher),
    Polling(PollWatcher),
}

impl AnyWatcher {
    fn watch(&mut self, folder: &Path) -> notify::Result<()> {
        match self {
            Self::Native(watcher) => watcher.watch(folder, RecursiveMode::NonRecursive),
            Self::Polling(watcher) => watcher.watch(folder, RecursiveMode::NonRecursive),
        }
    }

    fn unwatch(&mut self, folder: &Path) -> notify::Result<()> {
        match self {
            Self::Native(watcher) => watcher.unwatch(folder),
            Self::Polling(watcher) => watcher.unwatch(folder),
        }
    }
}

impl FolderWatch {
    /// Starts watching. Call it before loading what it watches, so that a change
    /// made while it loads is still seen.
    ///
    /// Never fails: when the system's watcher cannot start (e.g. the inotify watch
    /// limit), it polls every 500 ms; if even that fails, it logs why and
    /// [`changed`](Self::changed) yields `None`. A folder that does not exist is
    /// not watched (logged). A watched file that is a symbolic link is watched where
    /// it leads too.
    pub fn start(watched: Watched) -> Self {
        Self::start_with(watched, false)
    }

    fn start_with(watched: Watched, poll: bool) -> Self {
        let filter = Arc::new(Filter::new(&watched));
        let folders: Vec<PathBuf> = filter
            .folders()
            .into_iter()
            .filter(|folder| {
                let exists = folder.is_dir();
                if !exists {
                    let folder = folder.display();
                    tracing::warn!(%folder, "not a folder: changes in it are not watched");
                }
                exists
            })
            .collect();
        let (tx, rx) = mpsc::channel(1);
        let handler = {
            let filter = filter.clone();
            move |event: notify::Result<Event>| match event {
                Ok(event) => {
                    if filter.is_change(&event) {
                        // Full: a change is waiting already, which this one joins.
                        let _ = tx.try_send(());
                    }
                }
                Err(error) => tracing::debug!(%error, "watching the plugins folder"),
            }
        };
        let native = if poll {
            None
        } else {
            match start_watcher(&folders, || {
                notify::recommended_watcher(handler.clone()).map(AnyWatcher::Native)
            }) {
                Ok(watcher) => Some(watcher),
                Err(error) => {
                    tracing::warn!(
                        %error,
                        every = ?POLL_EVERY,
                        "cannot watch the plugins folder for changes; polling it instead"
                    );
                    None
                }
            }
        };
        let (watcher, settle) = match native {
            Some(watcher) => (watcher, SETTLE),
            None => {
                let config = notify::Config::default().with_poll_interval(POLL_EVERY);
                match start_watcher(&folders, || {
                    PollWatcher::new(handler, config).map(AnyWatcher::Polling)
                }) {
                    Ok(watcher) => (watcher, POLL_EVERY + SETTLE),
                    Err(error) => {
                        tracing::warn!(
                            %error,
                            "cannot poll the plugins folder either: changes are not reloaded"
                        );
                        return Self {
                            changes: None,
                            watcher: None,
                            filter,
                            folders,
                            settle: SETTLE,
                        };
                    }
                }
            }
        };
        let mut watch = Self {
            changes: Some(rx),
            watcher: Some(watcher),
            filter,
            folders,
            settle,
        };
        watch.rewatch();
        watch.follow_links();
        watch
    }

    /// Watches each watched folder that exists now, and the folder that holds it:
    /// there a folder removed, moved away or made (again) is seen, after which
    /// this runs again and watches the new one. A folder made again is a new one to
    /// the system's watcher, so every folder is watched anew.
    fn rewatch(&mut self) {
        let Some(watcher) = &mut self.watcher else {
            return;
        };
        let folders = self.filter.folders();
        let parents = folders
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf));
        let mut wanted: Vec<PathBuf> = Vec::new();
        for folder in folders.iter().cloned().chain(parents) {
            if !wanted.contains(&folder) {
                wanted.push(folder);
            }
        }
        for folder in wanted.into_iter().filter(|folder| folder.is_dir()) {
            // Not watched, or watched under an old identity: either way, anew.
            let _ = watcher.unwatch(&folder);
            if let Err(error) = watcher.watch(&folder) {
                let shown = folder.display();
                tracing::warn!(folder = %shown, %error, "cannot watch for plugin changes");
            }
            if !self.folders.contains(&folder) {
                self.folders.push(folder);
            }
        }
    }

    /// Watches the folders where the watched symbolic links lead now.
    fn follow_links(&mut self) {
        let Some(watcher) = &mut self.watcher else {
            return;
        };
        for folder in self.filter.follow_links() {
            if self.folders.contains(&folder) {
                continue;
            }
            if let Err(error) = watcher.watch(&folder) {
                let folder = folder.display();
                tracing::warn!(%folder, %error, "cannot watch where a plugin file leads");
            }
            self.folders.push(folder);
        }
    }

    /// The plugins folder watched, resolved.
    pub fn folder(&self) -> &Path {
        &self.filter.folder
    }

    /// Resolves once a watched file changed and then all of them held still for
    /// 300 ms (800 ms when polling): a burst of events is one change. Changes made
    /// since the last call (e.g. during a reload) count. `None` when watching ended
    /// (or never started); it then stays `None`.
    pub async fn changed(&mut self) -> Option<()> {
        let changes = self.changes.as_mut()?;
        if changes.recv().await.is_none() {
            self.changes = None;
            return None;
        }
        // Until the files held still (a timeout), or watching ended meanwhile.
        while let Ok(Some(())) = tokio::time::timeout(self.settle, changes.recv()).await {}
        // A folder made again is watched anew; a link added or changed now leads
        // elsewhere.
        self.rewatch();
        self.follow_links();
        Some(())
    }
}

/// Starts a watcher with `start` and watches `folders` with it.
fn start_watcher(
    folders: &[PathBuf],
    start: impl FnOnce() -> notify::Result<AnyWatcher>,
) -> notify::Result<AnyWatcher> {
    let mut watcher = start()?;
    for folder in folders {
        watcher.watch(folder)?;
    }
    Ok(watcher)
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;

    /// Long enough for any change to arrive and settle.
    const QUIET: Duration = Duration::from_secs(1);

    /// The next change, or fails after 5 s.
    async fn next(watch: &mut FolderWatch) {
        tokio::time::timeout(Duration::from_secs(5), watch.changed())
            .await
            .expect("the change arrives in time")
            .expect("still watching");
    }

    /// No change within `within`.
    async fn none(watch: &mut FolderWatch, within: Duration, what: &str) {
        let change = tokio::time::timeout(within, watch.changed()).await;
        assert!(change.is_err(), "{what}: {change:?}");
    }

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, Watched) {
        let dir = tempfile::tempdir().expect("temp dir");
        let plugins = dir.path().join("plugins");
        let etc = dir.path().join("etc");
        std::fs::create_dir(&plugins).expect("mkdir");
        std::fs::create_dir(&etc).expect("mkdir");
        let watched = Watched {
            folder: plugins.clone(),
            files: vec![etc.join("elsewhere.toml")],
        };
        (dir, plugins, etc, watched)
    }

    /// What every watcher must do, native or polling.
    async fn changes_are_seen_once(poll: bool) {
        let (_dir, plugins, etc, watched) = setup();
        let mut watch = FolderWatch::start_with(watched, poll);
        assert!(matches!(
            (&watch.watcher, poll),
            (Some(AnyWatcher::Native(_)), false) | (Some(AnyWatcher::Polling(_)), true)
        ));

        // Other files, in the folder or beside the config file, are not watched.
        std::fs::write(plugins.join("notes.txt"), "x").expect("write");
        std::fs::write(plugins.join("a.wasm.txt"), "x").expect("write");
        std::fs::write(etc.join("other.toml"), "x").expect("write");
        none(&mut watch, QUIET * 2, "other files").await;

        std::fs::write(plugins.join("a.wasm"), "x").expect("write");
        next(&mut watch).await;
        none(&mut watch, QUIET, "one change per write").await;

        // Reading is not a change (a reload reads every file).
        std::fs::read(plugins.join("a.wasm")).expect("read");
        none(&mut watch, QUIET, "a read").await;

        // The config file outside the folder counts too: it appears.
        std::fs::write(etc.join("elsewhere.toml"), "").expect("write");
        next(&mut watch).await;
        none(&mut watch, QUIET, "one change for the config").await;

        std::fs::write(plugins.join("piton.toml"), "").expect("write");
        next(&mut watch).await;
        std::fs::remove_file(plugins.join("a.wasm")).expect("remove");
        next(&mut watch).await;
    }

    #[tokio::test]
    async fn changed_files_give_one_change_each_and_other_files_none() {
        changes_are_seen_once(false).await;
    }

    #[tokio::test]
    async fn the_polling_fallback_sees_the_same_changes() {
        changes_are_seen_once(true).await;
    }

    #[tokio::test]
    async fn a_burst_is_one_change_once_the_files_held_still() {
        let (_dir, plugins, _etc, watched) = setup();
        let mut watch = FolderWatch::start(watched);
        // A file copied in pieces, with another beside it.
        let mut last = Instant::now();
        for i in 0..8 {
            let piece = vec![b'x'; 1000 * (i + 1)];
            std::fs::write(plugins.join("b.wasm"), piece).expect("write");
            std::fs::write(plugins.join("c.wasm"), "x").expect("write");
            last = Instant::now();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        next(&mut watch).await;
        assert!(
            last.elapsed() >= SETTLE,
            "reported before the files held still for {SETTLE:?}"
        );
        none(&mut watch, QUIET, "one change per burst").await;
    }

    #[tokio::test]
    async fn changes_made_before_the_first_wait_count() {
        let (_dir, plugins, _etc, watched) = setup();
        let mut watch = FolderWatch::start(watched);
        std::fs::write(plugins.join("a.wasm"), "x").expect("write");
        tokio::time::sleep(QUIET).await;
        next(&mut watch).await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_linked_file_changes_where_it_leads() {
        let (dir, plugins, _etc, watched) = setup();
        let build = dir.path().join("build");
        std::fs::create_dir(&build).expect("mkdir");
        std::fs::write(build.join("a.wasm"), "1").expect("write");
        std::fs::write(build.join("b.wasm"), "1").expect("write");
        std::os::unix::fs::symlink(build.join("a.wasm"), plugins.join("a.wasm")).expect("link");
        let mut watch = FolderWatch::start(watched);

        // Rebuilt in place: the link's target changes, the link does not.
        std::fs::write(build.join("a.wasm"), "2").expect("write");
        next(&mut watch).await;
        // Other files there are not watched.
        std::fs::write(build.join("other.wasm"), "1").expect("write");
        none(&mut watch, QUIET, "a file beside the target").await;

        // A link made later is followed from its change on.
        std::os::unix::fs::symlink(build.join("b.wasm"), plugins.join("b.wasm")).expect("link");
        next(&mut watch).await;
        std::fs::write(build.join("b.wasm"), "2").expect("write");
        next(&mut watch).await;
    }

    #[tokio::test]
    async fn a_folder_made_again_or_made_later_is_watched_from_then_on() {
        let (dir, plugins, etc, _) = setup();
        let later = dir.path().join("later");
        let watched = Watched {
            folder: plugins.clone(),
            files: vec![etc.join("elsewhere.toml"), later.join("piton.toml")],
        };
        let mut watch = FolderWatch::start(watched);

        // The plugins folder removed and made again (a checkout, `mv`): a change,
        // and the new folder's files are watched.
        std::fs::remove_dir(&plugins).expect("rmdir");
        std::fs::create_dir(&plugins).expect("mkdir");
        next(&mut watch).await;
        std::fs::write(plugins.join("a.wasm"), "x").expect("write");
        next(&mut watch).await;

        // The config file's folder did not exist at start: made later, it counts.
        std::fs::create_dir(&later).expect("mkdir");
        next(&mut watch).await;
        std::fs::write(later.join("piton.toml"), "").expect("write");
        next(&mut watch).await;
    }
}
