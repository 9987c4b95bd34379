//! Files the file tools open by what they are, not by a name checked earlier. A path
//! the PermissionEngine judged is resolved (no symbolic link, no `..` left in it), so
//! it is opened following no symbolic link in any component: a directory swapped for
//! a link between the check and the use fails the open instead of carrying it
//! elsewhere. Inside the project the open is also held beneath the project's opened
//! root. `openat2` (`RESOLVE_BENEATH`, `RESOLVE_NO_SYMLINKS`, which implies no magic
//! links) where the kernel has it; else a walk from an opened directory, component by
//! component, each opened with `O_NOFOLLOW`.
//!
//! A write goes the same way: the parent directory is opened so, the temporary file
//! is created in that opened directory and renamed there (`renameat`), so the file
//! lands in the directory that was judged whatever happens to its name meanwhile.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

/// The error of an open that met a symbolic link where the judged path had none.
pub const SWAPPED: &str = "became a symbolic link after it was checked";

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// The components of an absolute, resolved path, each a plain name.
fn names(path: &Path) -> std::io::Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(n) => out.push(n),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a resolved path",
                ))
            }
        }
    }
    Ok(out)
}

/// Whether this kernel has `openat2` (probed once).
fn has_openat2() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
        !matches!(
            nix::fcntl::openat2(nix::fcntl::AT_FDCWD, "/", how),
            Err(Errno::ENOSYS) | Err(Errno::EPERM)
        )
    })
}

/// Opens `rel` (plain names) beneath the opened directory `base`, following no link.
fn open_beneath(
    base: impl AsFd,
    rel: &[&OsStr],
    flags: OFlag,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let flags = flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
    if rel.is_empty() {
        return nix::fcntl::openat(base, ".", flags, mode).map_err(io);
    }
    if has_openat2() {
        let rel: std::path::PathBuf = rel.iter().collect();
        let how = OpenHow::new().flags(flags).mode(mode).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
        return nix::fcntl::openat2(base, rel.as_path(), how).map_err(io);
    }
    walk_beneath(base, rel, flags, mode)
}

/// [`open_beneath`] without `openat2`: component by component, each directory opened
/// without following a link.
fn walk_beneath(
    base: impl AsFd,
    rel: &[&OsStr],
    flags: OFlag,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let (last, dirs) = rel.split_last().ok_or_else(|| io(Errno::EINVAL))?;
    let mut dir: Option<OwnedFd> = None;
    for name in dirs {
        let next = match &dir {
            None => nix::fcntl::openat(
                &base,
                *name,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            ),
            Some(d) => nix::fcntl::openat(
                d,
                *name,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            ),
        }
        .map_err(|e| io(if e == Errno::ENOTDIR { Errno::ELOOP } else { e }))?;
        dir = Some(next);
    }
    match &dir {
        None => nix::fcntl::openat(base, *last, flags, mode),
        Some(d) => nix::fcntl::openat(d, *last, flags, mode),
    }
    .map_err(io)
}

/// Opens the resolved absolute `path` with `flags`, following no symbolic link in
/// any component; beneath `root` (opened the same way) when it lies there. An open
/// that met a link fails with `ELOOP`.
pub fn open(path: &Path, root: &Path, flags: OFlag, mode: Mode) -> std::io::Result<OwnedFd> {
    open_any(path, root, flags, mode).map_err(|e| {
        // A link where a directory was (met as "not a directory") is a link all the
        // same.
        let linked = || {
            path.ancestors()
                .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
        };
        if e.raw_os_error() == Some(libc::ENOTDIR) && linked() {
            io(Errno::ELOOP)
        } else {
            e
        }
    })
}

fn open_any(path: &Path, root: &Path, flags: OFlag, mode: Mode) -> std::io::Result<OwnedFd> {
    let all = names(path)?;
    match path.strip_prefix(root) {
        Ok(rel) if root.is_absolute() => {
            let base = open_beneath(
                open_root()?,
                &names(root)?,
                OFlag::O_PATH | OFlag::O_DIRECTORY,
                Mode::empty(),
            )?;
            let rel: Vec<&OsStr> = rel.iter().collect();
            open_beneath(base, &rel, flags, mode)
        }
        _ => open_beneath(open_root()?, &all, flags, mode),
    }
}

fn open_root() -> std::io::Result<OwnedFd> {
    nix::fcntl::open(
        "/",
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)
}

/// Opens a regular file of the resolved `path` for reading (see [`open`]), without
/// waiting on a FIFO and without becoming its terminal.
pub fn open_read(path: &Path, root: &Path) -> std::io::Result<std::fs::File> {
    open(
        path,
        root,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map(std::fs::File::from)
}

/// The text of a small regular file of the project's (a manifest, an instruction
/// file) at the resolved `path` beneath the resolved `root`, opened as [`open_read`]
/// opens (no link followed anywhere), when it is at most `cap` bytes of UTF-8.
pub fn read_small(path: &Path, root: &Path, cap: u64) -> Option<String> {
    use std::io::Read as _;
    let file = open_read(path, root).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > cap {
        return None;
    }
    let mut text = String::new();
    file.take(cap).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The directory `dir` (resolved), opened (see [`open`]), made first with its missing
/// ancestors when `create`: each made in its opened parent.
fn open_dir(dir: &Path, root: &Path, create: bool) -> std::io::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
    match open(dir, root, flags, Mode::empty()) {
        Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
            let parent = dir.parent().ok_or_else(|| io(Errno::ENOENT))?;
            let name = dir.file_name().ok_or_else(|| io(Errno::EINVAL))?;
            let p = open_dir(parent, root, true)?;
            match nix::sys::stat::mkdirat(&p, name, Mode::from_bits_truncate(0o777)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(io(e)),
            }
            open_beneath(p, &[name], flags, Mode::empty())
        }
        other => other,
    }
}

/// Writes `bytes` to the resolved `path` atomically: a temporary file made in the
/// opened parent directory (missing directories made), flushed, given an existing
/// file's permissions, then renamed over the name in that same directory.
pub fn write_atomic(path: &Path, root: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let parent = path.parent().ok_or_else(|| io(Errno::EINVAL))?;
    let name = path.file_name().ok_or_else(|| io(Errno::EINVAL))?;
    let dir = open_dir(parent, root, true)?;
    let mode = match nix::sys::stat::fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => Some(st.st_mode & 0o7777),
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ))
        }
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(io(e)),
    };
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".air-{}-{}.tmp", std::process::id(), unique()));
    let fd = nix::fcntl::openat(
        &dir,
        tmp.as_os_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o666),
    )
    .map_err(io)?;
    let mut file = std::fs::File::from(fd);
    let written = (|| -> std::io::Result<()> {
        file.write_all(bytes)?;
        if let Some(m) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(m))?;
        }
        file.sync_all()?;
        nix::fcntl::renameat(&dir, tmp.as_os_str(), &dir, name).map_err(io)
    })();
    if written.is_err() {
        let _ = nix::unistd::unlinkat(
            &dir,
            tmp.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
    written
}

/// Creates the file `path` (resolved, beneath `root`) with `bytes`, making missing
/// directories, following no link anywhere; fails when anything is at its name
/// already. No flush: for scratch copies.
pub fn write_new(path: &Path, root: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().ok_or_else(|| io(Errno::EINVAL))?;
    let name = path.file_name().ok_or_else(|| io(Errno::EINVAL))?;
    let dir = open_dir(parent, root, true)?;
    let fd = nix::fcntl::openat(
        &dir,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )
    .map_err(io)?;
    std::fs::File::from(fd).write_all(bytes)
}

/// Removes the file (or link) `path` (resolved, beneath `root`) from its opened
/// parent directory; a name that is not there is not an error.
pub fn remove(path: &Path, root: &Path) -> std::io::Result<()> {
    let parent = path.parent().ok_or_else(|| io(Errno::EINVAL))?;
    let name = path.file_name().ok_or_else(|| io(Errno::EINVAL))?;
    let dir = match open_dir(parent, root, false) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        other => other?,
    };
    match nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(io(e)),
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn no_component_may_be_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = std::fs::canonicalize(outside.path()).unwrap();
        std::fs::write(out.join("secret"), "s").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        assert!(open_read(&root.join("src/a.rs"), &root).is_ok());
        // The directory becomes a link after it was judged.
        std::fs::rename(root.join("src"), root.join("old")).unwrap();
        std::os::unix::fs::symlink(&out, root.join("src")).unwrap();
        let e = open_read(&root.join("src/secret"), &root).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        let e = write_atomic(&root.join("src/secret"), &root, b"x").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        assert_eq!(std::fs::read_to_string(out.join("secret")).unwrap(), "s");
        // Without openat2, the walk holds the same.
        let base = open_root().unwrap();
        let swapped = root.join("src/secret");
        let parts = names(&swapped).unwrap();
        let e = walk_beneath(
            &base,
            &parts,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW,
            Mode::empty(),
        )
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        let kept = root.join("old/a.rs");
        let parts = names(&kept).unwrap();
        assert!(walk_beneath(
            &base,
            &parts,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW,
            Mode::empty()
        )
        .is_ok());
        // The last component too.
        std::os::unix::fs::symlink(out.join("secret"), root.join("l")).unwrap();
        assert!(open_read(&root.join("l"), &root).is_err());
        assert!(write_atomic(&root.join("l"), &root, b"x").is_err());
        // Writes make missing directories and keep a file's mode; outside the root
        // the same rules hold from `/`.
        write_atomic(&root.join("new/deep/f.txt"), &root, b"hi").unwrap();
        assert_eq!(std::fs::read(root.join("new/deep/f.txt")).unwrap(), b"hi");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            root.join("old/a.rs"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        write_atomic(&root.join("old/a.rs"), &root, b"b").unwrap();
        let m = std::fs::metadata(root.join("old/a.rs")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o755);
        write_atomic(&out.join("o.txt"), &root, b"o").unwrap();
        assert_eq!(std::fs::read(out.join("o.txt")).unwrap(), b"o");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(root.join("old"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".air-"))
            .collect();
        assert!(left.is_empty());
    }
}
