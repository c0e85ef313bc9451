//! Only files and folders are opened: opening a named pipe waits for its other end,
//! for ever if none comes, and the thread that opens it (one of the runtime's
//! blocking threads) with it, past the call's deadline, until piton cannot end. A
//! pipe, socket or device in a mount is refused with `not-permitted` before it is
//! opened, and the refusal is reported to the call's observer.
//!
//! The type is looked up by path just before wasmtime-wasi opens the path. Between
//! the two, only something other than this call could put a pipe in its place: a
//! guest cannot make one, so it takes a process outside piton, or a pipe that was in
//! a writable mount already, renamed by another call at that moment.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorType, HostDescriptor, OpenFlags, PathFlags,
};

use super::view::{FsView, again};

impl FsView<'_> {
    /// `Ok` when `open-at` of `path` beneath `fd` opens (or makes) a file or a
    /// folder, or fails of itself; `not-permitted` for anything else there.
    pub(super) async fn only_files_and_folders(
        &mut self,
        fd: &Resource<Descriptor>,
        path_flags: PathFlags,
        path: &str,
        oflags: OpenFlags,
    ) -> FsResult<()> {
        // A new file, or nothing. (wasmtime-wasi opens without `O_DIRECTORY` and
        // checks for a folder once opened: `directory` does not keep an open from
        // waiting.)
        if oflags.contains(OpenFlags::CREATE | OpenFlags::EXCLUSIVE) {
            return Ok(());
        }
        let stat = (self.inner)
            .stat_at(again(fd), path_flags, path.to_owned())
            .await;
        match stat.map(|stat| stat.type_) {
            // A link not followed: the open fails with `loop`.
            Ok(DescriptorType::RegularFile | DescriptorType::Directory)
            | Ok(DescriptorType::SymbolicLink) => Ok(()),
            Ok(_) => self.deny(
                path,
                "opening a named pipe, socket or device (only files and folders are opened)",
            ),
            // Nothing there (the open may create it), or what stops the look stops
            // the open too: the open says which.
            Err(_) => Ok(()),
        }
    }
}
