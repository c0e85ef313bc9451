//! `wasi:filesystem` with the add-only rules in front of wasmtime-wasi's
//! implementation (the table of rules is in the module above).
//!
//! Each function looks up whether its descriptor is add-only; when it is not, the
//! call goes to wasmtime-wasi untouched, so read-only and read-write mounts behave
//! as wasmtime-wasi makes them, but for the bounds every mount has: listings read a
//! part at a time ([`super::listing`]), only files and folders opened
//! ([`super::special`]), and the counts of the module above.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, Advice, DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntryStream, ErrorCode,
    Filesize, HostDescriptor, MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};

use super::pin::Identity;
use super::quota::QuotaExceeded;
use super::state::{FsState, Node};
use crate::call::notes::Capability;

/// The filesystem functions' view of one call: wasmtime-wasi's, plus the add-only
/// bookkeeping.
pub(crate) struct FsView<'a> {
    pub(crate) inner: WasiFilesystemCtxView<'a>,
    pub(crate) state: &'a mut FsState,
    /// The call's open descriptors, capped (see `crate::wasm::fds`).
    pub(crate) fds: &'a mut crate::wasm::fds::CallFds,
}

/// A second handle on a descriptor the guest lent, to pass to wasmtime-wasi while
/// keeping the original for a later call (a borrow names the same table entry).
pub(super) fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

fn denied<T>() -> FsResult<T> {
    Err(ErrorCode::NotPermitted.into())
}

fn is_code(error: &FsError, code: ErrorCode) -> bool {
    error.downcast_ref().is_some_and(|e: &ErrorCode| *e == code)
}

fn identity(hash: MetadataHashValue) -> Identity {
    (hash.lower, hash.upper)
}

impl FsView<'_> {
    /// Refuses, reporting `path` (as the guest named it) and `why` to the call's
    /// observer.
    pub(super) fn deny<T>(&self, path: &str, why: &'static str) -> FsResult<T> {
        self.state.denials.deny(Capability::Fs, &path, why);
        denied()
    }

    fn is_add_only(&self, fd: &Resource<Descriptor>) -> bool {
        self.state.is_add_only(fd.rep())
    }

    /// Whether the guest may change the contents or times of `fd`: anything outside
    /// add-only mounts (wasmtime-wasi checks those), and in them only the files this
    /// call created.
    fn may_modify(&self, fd: &Resource<Descriptor>) -> FsResult<()> {
        match self.state.node(fd.rep()) {
            None | Some(Node::File { created: true }) => Ok(()),
            Some(Node::Dir | Node::File { created: false }) => self.deny(
                "(a file or folder the guest holds open)",
                "add-only: changing what existed before the call",
            ),
        }
    }

    /// `stream`, just made by wasmtime-wasi, replaced in the table by the same
    /// stream counted against the call's `max_write`.
    fn counted(
        &mut self,
        stream: Resource<DynOutputStream>,
    ) -> FsResult<Resource<DynOutputStream>> {
        let inner = self.inner.table.delete(stream)?;
        let counted = self.state.quota.wrap(inner);
        Ok(self.inner.table.push(counted)?)
    }

    async fn identity_of(&mut self, fd: &Resource<Descriptor>) -> FsResult<Identity> {
        Ok(identity(self.inner.metadata_hash(again(fd)).await?))
    }

    /// Records `new`, just opened beneath an add-only directory, as add-only too;
    /// `created` when this open created the file. Closes it again on failure.
    async fn adopt(
        &mut self,
        new: Resource<Descriptor>,
        created: bool,
    ) -> FsResult<Resource<Descriptor>> {
        let node = match self.classify(&new, created).await {
            Ok(node) => node,
            Err(error) => {
                HostDescriptor::drop(&mut self.inner, new).map_err(FsError::trap)?;
                return Err(error);
            }
        };
        self.state.adopt(new.rep(), node);
        Ok(new)
    }

    async fn classify(&mut self, new: &Resource<Descriptor>, created: bool) -> FsResult<Node> {
        if let Descriptor::Dir(_) = self.inner.table.get(new)? {
            return Ok(Node::Dir);
        }
        let id = self.identity_of(new).await?;
        if created {
            self.state.record_created(id);
        }
        Ok(Node::File {
            created: self.state.was_created(id),
        })
    }

    /// `open-at` beneath an add-only directory.
    async fn open_add_only(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        // wasmtime-wasi opens for writing on any of these; so do the rules.
        let writes = flags.contains(DescriptorFlags::WRITE)
            || oflags.contains(OpenFlags::CREATE)
            || oflags.contains(OpenFlags::TRUNCATE);
        if oflags.contains(OpenFlags::CREATE) {
            // Exclusive, so that the file opened is the one this open made, whatever
            // appears at the path meanwhile (a dangling link fails with `exist` too).
            let asked_exclusive = oflags.contains(OpenFlags::EXCLUSIVE);
            let exclusive = oflags | OpenFlags::EXCLUSIVE;
            match (self.inner)
                .open_at(again(&fd), path_flags, path.clone(), exclusive, flags)
                .await
            {
                Ok(new) => return self.adopt(new, true).await,
                // Without `exclusive` the guest asked to open what is there, if any:
                // the rules for an existing file below.
                Err(e) if !asked_exclusive && is_code(&e, ErrorCode::Exist) => {}
                Err(e) => return Err(e),
            }
        }
        let oflags = oflags & !(OpenFlags::CREATE | OpenFlags::EXCLUSIVE);
        if !writes {
            let new = (self.inner)
                .open_at(fd, path_flags, path, oflags, flags)
                .await?;
            return self.adopt(new, false).await;
        }

        // Writing to a file that exists: only to one this call created. The check by
        // path keeps the host from opening other files for writing at all (an open
        // for writing alone shows in file watchers); the check on the opened handle
        // makes sure the file opened is the file checked.
        let hash = (self.inner)
            .metadata_hash_at(again(&fd), path_flags, path.clone())
            .await?;
        if !self.state.was_created(identity(hash)) {
            return self.deny(
                &path,
                "add-only: writing to a file that existed before the call",
            );
        }
        // Truncated below, once the handle is known to be the file checked.
        let open = oflags & !OpenFlags::TRUNCATE;
        let new = (self.inner)
            .open_at(fd, path_flags, path, open, flags | DescriptorFlags::WRITE)
            .await?;
        let new = self.adopt(new, false).await?;
        let checked = match self.state.node(new.rep()) {
            Some(Node::File { created: true }) => Ok(()),
            _ => denied(),
        };
        let truncated = match checked {
            Ok(()) if oflags.contains(OpenFlags::TRUNCATE) => {
                self.inner.set_size(again(&new), 0).await
            }
            other => other,
        };
        if let Err(error) = truncated {
            HostDescriptor::drop(self, new).map_err(FsError::trap)?;
            return Err(error);
        }
        Ok(new)
    }

    /// `set-times-at` beneath an add-only directory: only a file this call created,
    /// checked by path and then on a handle, whose times are then set.
    async fn set_times_add_only(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        atim: NewTimestamp,
        mtim: NewTimestamp,
    ) -> FsResult<()> {
        let hash = (self.inner)
            .metadata_hash_at(again(&fd), path_flags, path.clone())
            .await?;
        if !self.state.was_created(identity(hash)) {
            return self.deny(
                &path,
                "add-only: changing a file that existed before the call",
            );
        }
        let file = (self.inner)
            .open_at(
                fd,
                path_flags,
                path,
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .await?;
        let file = self.adopt(file, false).await?;
        let result = match self.may_modify(&file) {
            Ok(()) => self.inner.set_times(again(&file), atim, mtim).await,
            Err(error) => Err(error),
        };
        HostDescriptor::drop(self, file).map_err(FsError::trap)?;
        result
    }
}

impl preopens::Host for FsView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let dirs = preopens::Host::get_directories(&mut self.inner)?;
        // Each folder handed out must be the one loaded; one that is not fails the
        // call (the guest never gets it).
        for (index, (fd, _)) in dirs.iter().enumerate() {
            if let Descriptor::Dir(dir) = self.inner.table.get(fd)? {
                self.state
                    .check_preopen(index, &dir.dir)
                    .map_err(wasmtime::Error::msg)?;
            }
        }
        self.state
            .adopt_preopens(dirs.iter().map(|(fd, _)| fd.rep()));
        Ok(dirs)
    }
}

impl types::Host for FsView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        self.inner.convert_error_code(err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if self.inner.table.get(&err)?.is::<QuotaExceeded>() {
            return Ok(Some(ErrorCode::Quota));
        }
        self.inner.filesystem_error_code(err)
    }
}

impl HostDescriptor for FsView<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        self.inner.read_via_stream(fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.may_modify(&fd)?;
        let stream = self.inner.write_via_stream(fd, offset)?;
        self.counted(stream)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.may_modify(&fd)?;
        let stream = self.inner.append_via_stream(fd)?;
        self.counted(stream)
    }

    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Filesize,
        len: Filesize,
        advice: Advice,
    ) -> FsResult<()> {
        self.inner.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.inner.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        self.inner.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        self.inner.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: Filesize) -> FsResult<()> {
        self.may_modify(&fd)?;
        self.inner.set_size(fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: NewTimestamp,
        mtim: NewTimestamp,
    ) -> FsResult<()> {
        self.may_modify(&fd)?;
        self.inner.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: Filesize,
        offset: Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        self.inner.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        mut buf: Vec<u8>,
        offset: Filesize,
    ) -> FsResult<Filesize> {
        self.may_modify(&fd)?;
        // A write past the quota writes what is left of it (a short write, as a
        // full disk would); the next one fails with `quota`.
        let allowed = self.state.quota.allow(buf.len()).ok_or(ErrorCode::Quota)?;
        buf.truncate(allowed);
        let written = self.inner.write(fd, buf, offset).await?;
        self.state.quota.charge(written);
        Ok(written)
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DirectoryEntryStream>> {
        if !self.state.listings.may_open() {
            return Err(ErrorCode::InsufficientMemory.into());
        }
        let listing = self.list(fd).await?;
        self.state.listings.opened(listing.rep());
        Ok(listing)
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.inner.sync(fd).await
    }

    async fn create_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        // Allowed in add-only mounts: a new folder changes nothing that was there, and
        // an existing name fails with `exist`.
        self.state.new_entries.allow()?;
        self.inner.create_directory_at(fd, path).await?;
        self.state.new_entries.made();
        Ok(())
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorStat> {
        self.inner.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<DescriptorStat> {
        self.inner.stat_at(fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        atim: NewTimestamp,
        mtim: NewTimestamp,
    ) -> FsResult<()> {
        if self.is_add_only(&fd) {
            return self
                .set_times_add_only(fd, path_flags, path, atim, mtim)
                .await;
        }
        self.inner
            .set_times_at(fd, path_flags, path, atim, mtim)
            .await
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // A second name for a file that existed would outlive the call as a way to
        // it, and a link between mounts would carry a file across their rules.
        // Neither side may be add-only.
        if self.is_add_only(&fd) || self.is_add_only(&new_descriptor) {
            return self.deny(&new_path, "add-only: a hard link in an add-only mount");
        }
        self.state.new_entries.allow()?;
        (self.inner)
            .link_at(fd, old_path_flags, old_path, new_descriptor, new_path)
            .await?;
        self.state.new_entries.made();
        Ok(())
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        // Each descriptor the guest holds is one of the call's capped host fds.
        let token = (self.fds.reserve(self.inner.table))
            .map_err(|_| FsError::from(ErrorCode::InsufficientMemory))?;
        // An open that may create is counted as a new entry (whether the file was
        // there cannot be told cheaply outside add-only mounts).
        let creates = oflags.contains(OpenFlags::CREATE);
        if creates {
            self.state.new_entries.allow()?;
        }
        (self.only_files_and_folders(&fd, path_flags, &path, oflags)).await?;
        let new = if self.is_add_only(&fd) {
            self.open_add_only(fd, path_flags, path, oflags, flags)
                .await?
        } else {
            let writes = flags.contains(DescriptorFlags::WRITE)
                || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
            let named = writes.then(|| path.clone());
            match (self.inner)
                .open_at(fd, path_flags, path, oflags, flags)
                .await
            {
                Ok(new) => new,
                Err(error) => {
                    if let Some(path) = named
                        && is_code(&error, ErrorCode::NotPermitted)
                    {
                        self.state.denials.deny(
                            Capability::Fs,
                            &path,
                            "writing where this call's access to the mount is read-only",
                        );
                    }
                    return Err(error);
                }
            }
        };
        self.fds.hold_descriptor(new.rep(), token);
        if creates {
            self.state.new_entries.made();
        }
        Ok(new)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.state.forget(fd.rep());
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        self.inner.readlink_at(fd, path).await
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        if self.is_add_only(&fd) {
            return self.deny(&path, "add-only: removing a folder");
        }
        self.inner.remove_directory_at(fd, path).await
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // A rename removes the old name and may replace what the new name held.
        if self.is_add_only(&fd) || self.is_add_only(&new_fd) {
            return self.deny(&old_path, "add-only: renaming in an add-only mount");
        }
        self.inner.rename_at(fd, old_path, new_fd, new_path).await
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        // A new link could later be written through to a file that existed.
        if self.is_add_only(&fd) {
            return self.deny(&dest_path, "add-only: a symbolic link in an add-only mount");
        }
        self.state.new_entries.allow()?;
        self.inner.symlink_at(fd, src_path, dest_path).await?;
        self.state.new_entries.made();
        Ok(())
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        if self.is_add_only(&fd) {
            return self.deny(&path, "add-only: deleting a file");
        }
        self.inner.unlink_file_at(fd, path).await
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        self.inner.is_same_object(a, b).await
    }

    async fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<MetadataHashValue> {
        self.inner.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<MetadataHashValue> {
        self.inner.metadata_hash_at(fd, path_flags, path).await
    }
}
