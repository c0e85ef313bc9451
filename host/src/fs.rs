//! The filesystem a call sees: its mounts, each read-only, add-only or read-write.

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::grants::{FsAccess, Mount};
use crate::wasm::SandboxError;

/// What the filesystem layer keeps for one call.
#[derive(Debug, Default)]
pub(crate) struct FsState {}

/// Preopens each mount with the access the call has.
pub(crate) fn configure(
    wasi: &mut WasiCtxBuilder,
    mounts: &[(Mount, FsAccess)],
) -> Result<FsState, SandboxError> {
    for (mount, access) in mounts {
        let perms = match access {
            FsAccess::ReadOnly => FsPerms::ReadOnly,
            FsAccess::ReadWrite => FsPerms::ReadWrite,
            FsAccess::AddOnly => {
                return Err(SandboxError(format!(
                    "add-only mount {} is not built yet",
                    mount.guest
                )));
            }
        };
        wasi.preopened_dir(&mount.host, &mount.guest, perms)
            .map_err(|e| SandboxError(format!("cannot open {}: {e}", mount.host.display())))?;
    }
    Ok(FsState::default())
}

/// Adds this layer's WASI functions to the linker (shadowing wasmtime-wasi's).
pub(crate) fn add_to_linker(
    _linker: &mut wasmtime::component::Linker<crate::wasm::Sandbox>,
) -> wasmtime::Result<()> {
    Ok(())
}
