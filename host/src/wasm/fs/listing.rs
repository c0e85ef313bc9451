//! Folder listings (`read-directory`), read a part at a time.
//!
//! wasmtime-wasi reads every name of a folder when a listing opens and keeps them
//! until the listing is dropped: a folder of 240 000 names is tens of MiB on the
//! host, for each listing. On Linux piton lists the folder itself instead, one
//! `getdents` of [`CHUNK`] bytes at a time, when the guest has read what the last one
//! gave: an open listing holds a descriptor of its folder (one of the call's counted
//! descriptors) and the names of one read, a few tens of KiB at most, however large
//! the folder. Elsewhere the listing is wasmtime-wasi's. Either way a call holds at
//! most [`super::quota::MAX_LISTINGS`].
//!
//! The guest's `directory-entry-stream` handles keep wasmtime-wasi's resource type,
//! but on Linux the table entry behind one is a [`Listing`]. Every function of that
//! resource goes through [`FsView`] (below), so wasmtime-wasi never looks one up.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DirectoryEntry, DirectoryEntryStream, HostDirectoryEntryStream,
};

use super::view::FsView;

#[cfg(target_os = "linux")]
pub(crate) use chunked::Listing;

#[cfg(target_os = "linux")]
mod chunked {
    use std::collections::VecDeque;
    use std::ffi::CStr;
    use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

    use rustix::fd::OwnedFd;
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
    use wasmtime_wasi::p2::bindings::filesystem::types::{
        DescriptorType, DirectoryEntry, ErrorCode,
    };
    use wasmtime_wasi::runtime::spawn_blocking;

    use crate::wasm::fds::FdToken;

    /// The bytes of directory entries read from the folder at once: a few hundred
    /// short names, or about 30 of the longest (255 bytes).
    pub(super) const CHUNK: usize = 8 << 10;

    /// An open listing: where it is in its folder, and the names read but not yet
    /// given to the guest.
    pub(crate) struct Listing(Arc<Mutex<Cursor>>);

    struct Cursor {
        /// The folder, opened again for this listing (its own position).
        folder: OwnedFd,
        /// Read from the folder, not yet given out.
        ahead: VecDeque<Result<DirectoryEntry, ErrorCode>>,
        /// The folder's end (or an error) was reached.
        done: bool,
        /// The call's count of open descriptors, for `folder`.
        _fd: FdToken,
    }

    fn code(errno: rustix::io::Errno) -> ErrorCode {
        ErrorCode::from(std::io::Error::from(errno))
    }

    fn lock(cursor: &Mutex<Cursor>) -> MutexGuard<'_, Cursor> {
        cursor.lock().unwrap_or_else(PoisonError::into_inner)
    }

    impl Listing {
        /// A listing of `folder` from its start, holding `fd`.
        pub(crate) async fn open(
            folder: Arc<std::fs::File>,
            fd: FdToken,
        ) -> Result<Self, ErrorCode> {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let opened =
                spawn_blocking(move || rustix::fs::openat(&*folder, c".", flags, Mode::empty()))
                    .await
                    .map_err(code)?;
            Ok(Self(Arc::new(Mutex::new(Cursor {
                folder: opened,
                ahead: VecDeque::new(),
                done: false,
                _fd: fd,
            }))))
        }

        /// The next entry, or `None` at the end; reads the folder on when all read
        /// so far was given out.
        pub(crate) async fn next(&self) -> Result<Option<DirectoryEntry>, ErrorCode> {
            {
                let mut cursor = lock(&self.0);
                if !cursor.ahead.is_empty() || cursor.done {
                    return cursor.give();
                }
            }
            let cursor = Arc::clone(&self.0);
            spawn_blocking(move || {
                let mut cursor = lock(&cursor);
                while cursor.ahead.is_empty() && !cursor.done {
                    cursor.read();
                }
                cursor.give()
            })
            .await
        }
    }

    impl Cursor {
        fn give(&mut self) -> Result<Option<DirectoryEntry>, ErrorCode> {
            self.ahead.pop_front().transpose()
        }

        /// Reads one [`CHUNK`] of the folder's entries into `ahead` (none but `.`
        /// and `..`, maybe).
        fn read(&mut self) {
            let mut buf = Vec::with_capacity(CHUNK);
            let Self {
                folder,
                ahead,
                done,
                ..
            } = self;
            // One `getdents` a read: the loop stops once its buffer is used up (an
            // entry left in it would be lost, the folder's position being past it).
            let mut entries = RawDir::new(&*folder, buf.spare_capacity_mut());
            loop {
                match entries.next() {
                    None => {
                        *done = true;
                        return;
                    }
                    Some(Err(errno)) => {
                        ahead.push_back(Err(code(errno)));
                        *done = true;
                        return;
                    }
                    Some(Ok(entry)) => {
                        let name = entry.file_name();
                        if !matches!(name.to_bytes(), b"." | b"..") {
                            ahead.push_back(describe(folder, name, entry.file_type()));
                        }
                    }
                }
                if entries.is_buffer_empty() {
                    return;
                }
            }
        }
    }

    /// The entry `name` of `folder`, whose type the folder read gave as `kind`; as
    /// wasmtime-wasi describes it (the type of the entry itself, not of what a link
    /// points to).
    fn describe(
        folder: &OwnedFd,
        name: &CStr,
        kind: FileType,
    ) -> Result<DirectoryEntry, ErrorCode> {
        let kind = if kind == FileType::Unknown {
            let stat = rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW).map_err(code)?;
            FileType::from_raw_mode(stat.st_mode)
        } else {
            kind
        };
        let name = name
            .to_str()
            .map_err(|_| ErrorCode::IllegalByteSequence)?
            .to_owned();
        // wasmtime-wasi's names for types on Unix: pipes and sockets are `unknown`.
        let type_ = match kind {
            FileType::Directory => DescriptorType::Directory,
            FileType::Symlink => DescriptorType::SymbolicLink,
            FileType::RegularFile => DescriptorType::RegularFile,
            FileType::BlockDevice => DescriptorType::BlockDevice,
            FileType::CharacterDevice => DescriptorType::CharacterDevice,
            _ => DescriptorType::Unknown,
        };
        Ok(DirectoryEntry { type_, name })
    }
}

impl FsView<'_> {
    /// `read-directory`: a listing read a part at a time.
    #[cfg(target_os = "linux")]
    pub(super) async fn list(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DirectoryEntryStream>> {
        use wasmtime_wasi::p2::FsError;
        use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

        let Descriptor::Dir(dir) = self.inner.table.get(&fd)? else {
            return Err(ErrorCode::NotDirectory.into());
        };
        let folder = std::sync::Arc::clone(&dir.dir);
        let token = (self.fds.reserve(self.inner.table))
            .map_err(|_| FsError::from(ErrorCode::InsufficientMemory))?;
        let listing = Listing::open(folder, token).await?;
        let listing = self.inner.table.push(listing)?;
        Ok(Resource::new_own(listing.rep()))
    }

    /// `read-directory`: wasmtime-wasi's listing.
    #[cfg(not(target_os = "linux"))]
    pub(super) async fn list(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DirectoryEntryStream>> {
        use wasmtime_wasi::p2::bindings::filesystem::types::HostDescriptor;
        self.inner.read_directory(fd).await
    }

    /// Whether the listing `stream` is one of piton's.
    #[cfg(target_os = "linux")]
    fn is_chunked(&self, stream: &Resource<DirectoryEntryStream>) -> bool {
        let ours = Resource::<Listing>::new_borrow(stream.rep());
        self.inner.table.get(&ours).is_ok()
    }
}

impl HostDirectoryEntryStream for FsView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<DirectoryEntryStream>,
    ) -> FsResult<Option<DirectoryEntry>> {
        #[cfg(target_os = "linux")]
        if self.is_chunked(&stream) {
            let ours = Resource::<Listing>::new_borrow(stream.rep());
            let listing = self.inner.table.get(&ours)?;
            return Ok(listing.next().await?);
        }
        self.inner.read_directory_entry(stream).await
    }

    fn drop(&mut self, stream: Resource<DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.state.listings.closed(stream.rep());
        #[cfg(target_os = "linux")]
        if self.is_chunked(&stream) {
            self.inner
                .table
                .delete(Resource::<Listing>::new_own(stream.rep()))?;
            return Ok(());
        }
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}
