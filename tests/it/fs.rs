//! Filesystem grants: read-only, add-only and read-write mounts, and escapes.
