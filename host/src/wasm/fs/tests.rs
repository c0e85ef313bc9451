//! The add-only bookkeeping, and the view driven directly (no guest): each rule on a
//! real temporary folder.

use std::path::Path;

use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::preopens::Host as _;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorType, DirectoryEntryStream, ErrorCode, HostDescriptor,
    HostDirectoryEntryStream, NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

use super::pin::OpenFailed;
use super::state::Node;
use super::view::FsView;
use super::*;
use crate::grants::MountMode;

#[test]
fn preopens_are_marked_by_their_order_and_unknown_ones_are_add_only() {
    let mut state = FsState {
        preopens: vec![false, true],
        ..FsState::default()
    };
    state.adopt_preopens([7, 8, 9]);
    assert_eq!(state.node(7), None);
    assert_eq!(state.node(8), Some(Node::Dir));
    assert_eq!(
        state.node(9),
        Some(Node::Dir),
        "unknown preopens fail closed"
    );
    state.forget(8);
    assert!(
        !state.is_add_only(8),
        "a dropped index is free for any descriptor"
    );
}

#[test]
fn created_files_are_remembered() {
    let mut state = FsState::default();
    assert!(!state.was_created((1, 2)));
    state.record_created((1, 2));
    assert!(state.was_created((1, 2)));
    assert!(!state.was_created((2, 1)));
}

#[test]
fn configure_records_which_mounts_are_add_only() {
    let dir = tempfile::tempdir().unwrap();
    let mount = |guest: &str| Mount {
        host: dir.path().into(),
        guest: guest.into(),
        mode: MountMode::Write,
    };
    let mounts = [
        (mount("/r"), FsAccess::ReadOnly),
        (mount("/a"), FsAccess::AddOnly),
        (mount("/w"), FsAccess::ReadWrite),
    ];
    let pins = Pins::new([dir.path()]);
    let state = configure(&mut WasiCtxBuilder::new(), &mounts, &pins, u64::MAX).unwrap();
    assert_eq!(state.preopens, [false, true, false]);

    let missing = [(
        Mount {
            host: dir.path().join("missing"),
            ..mount("/m")
        },
        FsAccess::AddOnly,
    )];
    let pins = Pins::new([missing[0].0.host.as_path()]);
    let error = configure(&mut WasiCtxBuilder::new(), &missing, &pins, u64::MAX).unwrap_err();
    assert!(
        matches!(&error, MountRefused::AtLoad(OpenFailed::Walk { host, .. }) if *host == missing[0].0.host),
        "{error:?}"
    );
    assert!(error.to_string().contains("missing"), "{error}");
}

#[cfg(unix)]
#[test]
fn configure_refuses_a_mount_whose_folder_was_replaced_since_load() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let pins = Pins::new([sub.as_path()]);
    let mounts = [(
        Mount {
            host: sub.clone(),
            guest: "/sub".into(),
            mode: MountMode::Read,
        },
        FsAccess::ReadOnly,
    )];
    assert!(configure(&mut WasiCtxBuilder::new(), &mounts, &pins, u64::MAX).is_ok());
    std::fs::rename(&sub, dir.path().join("old")).unwrap();
    std::os::unix::fs::symlink(dir.path(), &sub).unwrap();
    let error = configure(&mut WasiCtxBuilder::new(), &mounts, &pins, u64::MAX).unwrap_err();
    assert!(
        matches!(&error, MountRefused::Replaced { host, guest } if *host == sub && guest == "/sub"),
        "{error:?}"
    );
    // A mount never pinned is refused too.
    let error = configure(
        &mut WasiCtxBuilder::new(),
        &mounts,
        &Pins::default(),
        u64::MAX,
    )
    .unwrap_err();
    assert!(
        matches!(&error, MountRefused::NotPinned(host) if *host == sub),
        "{error:?}"
    );
}

/// The check that counts is on the descriptor handed out: a preopen whose folder is
/// not the one loaded (as if swapped between the look by path and the open) is never
/// given to the guest.
#[cfg(unix)]
#[test]
fn get_directories_refuses_a_preopen_that_is_not_the_folder_loaded() {
    let mut fixture = Fixture::new(FsAccess::ReadOnly);
    let Some(loaded) = fixture.state.loaded.first_mut() else {
        panic!("one preopen");
    };
    loaded.2 = Some((0, 0));
    let error = fixture.view().get_directories().unwrap_err();
    assert!(error.to_string().contains("was replaced"), "{error}");
    assert!(fixture.state.add_only.is_empty(), "nothing was handed out");
}

/// One mount of a temporary folder holding `existing.txt` and `sub/inner.txt`.
struct Fixture {
    dir: tempfile::TempDir,
    wasi: WasiCtx,
    table: ResourceTable,
    state: FsState,
    fds: crate::wasm::fds::CallFds,
}

impl Fixture {
    fn new(access: FsAccess) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("existing.txt"), "original").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/inner.txt"), "inner").unwrap();
        let mount = Mount {
            host: dir.path().into(),
            guest: "/data".into(),
            mode: MountMode::Write,
        };
        let mut builder = WasiCtxBuilder::new();
        let pins = Pins::new([dir.path()]);
        let state = configure(&mut builder, &[(mount, access)], &pins, u64::MAX).unwrap();
        Self {
            dir,
            wasi: builder.build(),
            table: ResourceTable::new(),
            state,
            fds: Default::default(),
        }
    }

    fn view(&mut self) -> FsView<'_> {
        FsView {
            inner: WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            state: &mut self.state,
            fds: &mut self.fds,
        }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// The preopen, as the guest gets it.
    fn root(&mut self) -> Resource<Descriptor> {
        let mut dirs = self.view().get_directories().unwrap();
        dirs.remove(0).0
    }

    async fn open(
        &mut self,
        dir: &Resource<Descriptor>,
        path: &str,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let dir = Resource::new_borrow(dir.rep());
        (self.view())
            .open_at(dir, PathFlags::empty(), path.into(), oflags, flags)
            .await
    }
}

fn code<T>(result: FsResult<T>) -> ErrorCode {
    match result {
        Ok(_) => panic!("expected an error code"),
        Err(error) => error.downcast().unwrap(),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn borrow(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

#[tokio::test]
async fn add_only_refuses_writing_what_existed() {
    let mut fx = Fixture::new(FsAccess::AddOnly);
    let root = fx.root();
    let write = DescriptorFlags::WRITE;
    let create_truncate = OpenFlags::CREATE | OpenFlags::TRUNCATE;
    for (oflags, flags) in [
        (create_truncate, write),
        (OpenFlags::empty(), write),
        (OpenFlags::TRUNCATE, DescriptorFlags::READ),
        (OpenFlags::CREATE, DescriptorFlags::READ),
    ] {
        let result = fx.open(&root, "existing.txt", oflags, flags).await;
        assert_eq!(
            code(result),
            ErrorCode::NotPermitted,
            "{oflags:?} {flags:?}"
        );
    }
    let exclusive = OpenFlags::CREATE | OpenFlags::EXCLUSIVE;
    let result = fx.open(&root, "existing.txt", exclusive, write).await;
    assert_eq!(code(result), ErrorCode::Exist);

    let file = fx.open(
        &root,
        "existing.txt",
        OpenFlags::empty(),
        DescriptorFlags::READ,
    );
    let file = file.await.unwrap();
    let mut view = fx.view();
    assert_eq!(
        code(view.write(borrow(&file), b"pwned".to_vec(), 0).await),
        ErrorCode::NotPermitted
    );
    assert_eq!(
        code(view.set_size(borrow(&file), 0).await),
        ErrorCode::NotPermitted
    );
    let now = NewTimestamp::Now;
    assert_eq!(
        code(view.set_times(borrow(&file), now, now).await),
        ErrorCode::NotPermitted
    );
    assert_eq!(
        code(view.append_via_stream(borrow(&file))),
        ErrorCode::NotPermitted
    );
    assert_eq!(
        code(
            view.unlink_file_at(borrow(&root), "existing.txt".into())
                .await
        ),
        ErrorCode::NotPermitted
    );
    assert_eq!(
        code(
            view.rename_at(
                borrow(&root),
                "existing.txt".into(),
                borrow(&root),
                "x".into()
            )
            .await
        ),
        ErrorCode::NotPermitted
    );
    assert_eq!(read(&fx.path("existing.txt")), "original");
}

#[tokio::test]
async fn add_only_creates_new_files_and_writes_only_those() {
    let mut fx = Fixture::new(FsAccess::AddOnly);
    let root = fx.root();
    let write = DescriptorFlags::WRITE;
    let file = fx
        .open(&root, "new.txt", OpenFlags::CREATE, write)
        .await
        .unwrap();
    let mut view = fx.view();
    view.write(borrow(&file), b"hello world".to_vec(), 0)
        .await
        .unwrap();
    view.set_size(borrow(&file), 5).await.unwrap();
    assert_eq!(read(&fx.path("new.txt")), "hello");

    // Reopened later in the call, with truncation: still this call's file.
    let again = fx.open(&root, "new.txt", OpenFlags::TRUNCATE, write).await;
    let again = again.unwrap();
    assert_eq!(read(&fx.path("new.txt")), "");
    let mut view = fx.view();
    view.write(borrow(&again), b"bye".to_vec(), 0)
        .await
        .unwrap();
    HostDescriptor::drop(&mut view, again).unwrap();
    HostDescriptor::drop(&mut view, file).unwrap();
    assert_eq!(read(&fx.path("new.txt")), "bye");
}

#[tokio::test]
async fn add_only_holds_beneath_a_subfolder_descriptor() {
    let mut fx = Fixture::new(FsAccess::AddOnly);
    let root = fx.root();
    let sub = fx.open(&root, "sub", OpenFlags::DIRECTORY, DescriptorFlags::READ);
    let sub = sub.await.unwrap();
    assert_eq!(fx.state.node(sub.rep()), Some(Node::Dir));
    let result = fx
        .open(
            &sub,
            "inner.txt",
            OpenFlags::TRUNCATE,
            DescriptorFlags::WRITE,
        )
        .await;
    assert_eq!(code(result), ErrorCode::NotPermitted);
    let mut view = fx.view();
    let result = view.unlink_file_at(borrow(&sub), "inner.txt".into()).await;
    assert_eq!(code(result), ErrorCode::NotPermitted);
    let result = view
        .symlink_at(borrow(&sub), "inner.txt".into(), "s".into())
        .await;
    assert_eq!(code(result), ErrorCode::NotPermitted);
    let result = view
        .link_at(
            borrow(&sub),
            PathFlags::empty(),
            "inner.txt".into(),
            borrow(&root),
            "l".into(),
        )
        .await;
    assert_eq!(code(result), ErrorCode::NotPermitted);

    // Dropping forgets the index, so a later descriptor there is judged afresh.
    let rep = sub.rep();
    HostDescriptor::drop(&mut view, sub).unwrap();
    assert_eq!(fx.state.node(rep), None);
    assert_eq!(read(&fx.path("sub/inner.txt")), "inner");
}

#[tokio::test]
async fn read_write_mounts_are_left_to_wasmtime_wasi() {
    let mut fx = Fixture::new(FsAccess::ReadWrite);
    let root = fx.root();
    assert_eq!(fx.state.node(root.rep()), None);
    let flags = DescriptorFlags::WRITE;
    let file = fx.open(&root, "existing.txt", OpenFlags::TRUNCATE, flags);
    let file = file.await.unwrap();
    HostDescriptor::drop(&mut fx.view(), file).unwrap();
    assert_eq!(read(&fx.path("existing.txt")), "");
    let mut view = fx.view();
    view.unlink_file_at(borrow(&root), "existing.txt".into())
        .await
        .unwrap();
    assert!(!fx.path("existing.txt").exists());
}

#[tokio::test]
async fn read_only_mounts_stay_read_only() {
    let mut fx = Fixture::new(FsAccess::ReadOnly);
    let root = fx.root();
    let result = fx.open(&root, "new.txt", OpenFlags::CREATE, DescriptorFlags::WRITE);
    assert_eq!(code(result.await), ErrorCode::NotPermitted);
    let mut view = fx.view();
    let result = view.create_directory_at(borrow(&root), "d".into()).await;
    assert_eq!(code(result), ErrorCode::NotPermitted);
    assert!(!fx.path("new.txt").exists() && !fx.path("d").exists());
}

#[tokio::test]
async fn open_descriptors_are_capped_per_call_and_given_back_when_dropped() {
    let mut fx = Fixture::new(FsAccess::ReadOnly);
    let root = fx.root();
    let (none, read) = (OpenFlags::empty(), DescriptorFlags::READ);
    let mut open = Vec::new();
    let refused = loop {
        match fx.open(&root, "existing.txt", none, read).await {
            Ok(fd) => open.push(fd),
            Err(error) => break error,
        }
        assert!(open.len() <= 256, "no cap on open descriptors");
    };
    assert!(open.len() >= 16, "{}", open.len());
    assert_eq!(code::<()>(Err(refused)), ErrorCode::InsufficientMemory);
    // Dropping one lets the next open through; the call never holds more.
    let fd = open.pop().unwrap();
    HostDescriptor::drop(&mut fx.view(), fd).unwrap();
    let again = fx.open(&root, "existing.txt", none, read).await.unwrap();
    open.push(again);
    assert!(fx.open(&root, "existing.txt", none, read).await.is_err());
}

fn mkfifo(path: &Path) {
    use rustix::fs::{CWD, FileType, Mode, mknodat};
    mknodat(CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
}

/// Opens the other end of the pipe at `path` again and again until dropped, so that
/// an open of it that waits (a failure of the test) ends rather than hangs the test.
struct PipePartner(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl PipePartner {
    fn new(path: &Path) -> Self {
        use std::os::unix::fs::OpenOptionsExt as _;
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (path, done) = (path.to_owned(), stop.clone());
        std::thread::spawn(move || {
            let nonblock = rustix::fs::OFlags::NONBLOCK.bits() as i32;
            while !done.load(Ordering::Relaxed) {
                let mut open = std::fs::OpenOptions::new();
                let _reader = open.read(true).custom_flags(nonblock).open(&path);
                let _writer = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(nonblock)
                    .open(&path);
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        Self(stop)
    }
}

impl Drop for PipePartner {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Every entry of the listing `stream`, in order, as the guest reads them (through
/// piton's view, or wasmtime-wasi's alone when `inner`).
async fn entries(
    fx: &mut Fixture,
    stream: &Resource<DirectoryEntryStream>,
    inner: bool,
) -> Vec<Result<(String, DescriptorType), ErrorCode>> {
    let mut out = Vec::new();
    loop {
        let stream = Resource::new_borrow(stream.rep());
        let mut view = fx.view();
        let next = if inner {
            view.inner.read_directory_entry(stream).await
        } else {
            view.read_directory_entry(stream).await
        };
        match next {
            Ok(Some(entry)) => out.push(Ok((entry.name, entry.type_))),
            Ok(None) => return out,
            Err(error) => out.push(Err(error.downcast().unwrap())),
        }
    }
}

#[tokio::test]
async fn a_listing_read_a_part_at_a_time_gives_what_wasmtime_wasi_gives() {
    use std::os::unix::ffi::OsStrExt as _;
    let mut fx = Fixture::new(FsAccess::ReadOnly);
    // Many parts' worth of long names, and one of each kind of entry.
    for i in 0..2000 {
        std::fs::write(fx.path(&format!("{i:0>200}")), "").unwrap();
    }
    std::os::unix::fs::symlink("existing.txt", fx.path("link")).unwrap();
    mkfifo(&fx.path("pipe"));
    let bad = std::ffi::OsStr::from_bytes(b"not-utf8-\xff");
    std::fs::write(fx.dir.path().join(bad), "").unwrap();

    let root = fx.root();
    let ours = fx.view().read_directory(borrow(&root)).await.unwrap();
    let theirs = (fx.view().inner.read_directory(borrow(&root)).await).unwrap();
    let (mut ours, mut theirs) = (
        entries(&mut fx, &ours, false).await,
        entries(&mut fx, &theirs, true).await,
    );
    // existing.txt, sub, link, pipe and the name that is not UTF-8.
    assert_eq!(ours.len(), 2000 + 5, "{:?}", &ours[..8]);
    let key = |e: &Result<(String, DescriptorType), ErrorCode>| format!("{e:?}");
    ours.sort_by_key(key);
    theirs.sort_by_key(key);
    assert_eq!(ours, theirs);
    assert!(ours.contains(&Ok(("sub".into(), DescriptorType::Directory))));
    assert!(ours.contains(&Ok(("link".into(), DescriptorType::SymbolicLink))));
    assert!(ours.contains(&Err(ErrorCode::IllegalByteSequence)));
}

#[tokio::test]
async fn a_listing_holds_one_of_the_calls_descriptors_until_dropped() {
    let mut fx = Fixture::new(FsAccess::ReadOnly);
    let root = fx.root();
    let mut listings = Vec::new();
    for _ in 0..super::quota::MAX_LISTINGS {
        listings.push(fx.view().read_directory(borrow(&root)).await.unwrap());
    }
    let (none, read) = (OpenFlags::empty(), DescriptorFlags::READ);
    let mut open = 0;
    while fx.open(&root, "existing.txt", none, read).await.is_ok() {
        open += 1;
    }
    let per_call = open + listings.len();
    assert!(
        (16..=256).contains(&per_call),
        "{open} files besides the listings"
    );
    for listing in listings {
        HostDirectoryEntryStream::drop(&mut fx.view(), listing).unwrap();
    }
    assert!(fx.open(&root, "existing.txt", none, read).await.is_ok());
}

#[tokio::test]
async fn only_files_and_folders_are_opened() {
    let mut fx = Fixture::new(FsAccess::ReadWrite);
    mkfifo(&fx.path("pipe"));
    let _partner = PipePartner::new(&fx.path("pipe"));
    std::os::unix::fs::symlink("pipe", fx.path("to-pipe")).unwrap();
    let root = fx.root();
    let (none, read) = (OpenFlags::empty(), DescriptorFlags::READ);
    // Each of these would wait for a writer, for ever.
    for (path, flags) in [("pipe", read), ("pipe", DescriptorFlags::WRITE)] {
        let result = fx.open(&root, path, none, flags).await;
        assert_eq!(code(result), ErrorCode::NotPermitted, "{path}");
    }
    let mut view = fx.view();
    let follow = view.open_at(
        borrow(&root),
        PathFlags::SYMLINK_FOLLOW,
        "to-pipe".into(),
        none,
        read,
    );
    assert_eq!(code(follow.await), ErrorCode::NotPermitted);
    let as_folder = fx.open(&root, "pipe", OpenFlags::DIRECTORY, read);
    assert_eq!(code(as_folder.await), ErrorCode::NotPermitted);
    // Files and folders open as before; so does a new file.
    fx.open(&root, "existing.txt", none, read).await.unwrap();
    fx.open(&root, "sub", none, read).await.unwrap();
    fx.open(&root, "new.txt", OpenFlags::CREATE, DescriptorFlags::WRITE)
        .await
        .unwrap();
}
