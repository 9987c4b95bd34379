//! What a sandboxed command may see, beyond what Landlock lets it write: its own
//! mount namespace, where air's own state and the credential stores are covered by
//! empty read-only stand-ins and the files that change what runs later (git's
//! configuration and hooks, air's permissions) are read-only; its own PID namespace
//! with a fresh `/proc`, so no other process (airsd, the workers, the user's shell)
//! and no other environment is visible. A user namespace gives an unprivileged user
//! the right to do this (as bubblewrap does); root needs none, and gives up the
//! capabilities that could undo it.
//!
//! Runs in the launcher process only (`airsd __sandbox`), which is single-threaded,
//! as `unshare(CLONE_NEWUSER)` and `fork` require.

use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, getgid, getuid, ForkResult};

/// What the command's namespace hides and makes read-only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Views {
    /// Covered by an empty stand-in (a directory by an empty read-only tmpfs, a
    /// file or socket by `/dev/null`, read-only).
    pub hidden: Vec<PathBuf>,
    /// Directories inside a hidden one that stay as they are (a task's worktree
    /// inside air's state): bound back at their own path onto the stand-in.
    pub shown: Vec<PathBuf>,
    /// Made read-only in place.
    pub read_only: Vec<PathBuf>,
    /// Directories bound onto themselves, writable as before but a mount point now:
    /// they cannot be renamed, removed or replaced.
    pub pinned: Vec<PathBuf>,
    /// Copies with the secrets taken out, bound read-only over their originals:
    /// `(copy, original)`.
    pub masked: Vec<(PathBuf, PathBuf)>,
    /// Directories of the checkout lent read-only into a task's worktree (its Python
    /// environment, its `node_modules`): `(the checkout's, the worktree's empty
    /// directory it is bound onto)`.
    pub lent: Vec<(PathBuf, PathBuf)>,
    /// The home directory, whose other names (a second mount of it, as containers and
    /// automounters make) are covered too, but for `home_read`.
    pub home: Option<PathBuf>,
    /// What of the home directory commands may read.
    pub home_read: Vec<PathBuf>,
}

/// One mount of the namespace, from `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor` of its file system.
    pub dev: String,
    /// The directory of its file system it shows.
    pub root: PathBuf,
    /// Where it is mounted.
    pub point: PathBuf,
}

/// A mountinfo field's octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The mounts in `text` (mountinfo's format).
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some(Mount {
                dev: f.get(2)?.to_string(),
                root: unescape(f.get(3)?),
                point: unescape(f.get(4)?),
            })
        })
        .collect()
}

fn mounts() -> Vec<Mount> {
    parse_mounts(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// `major:minor` of the file system `path` is on.
fn dev_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let d = std::fs::symlink_metadata(path).ok()?.dev();
    Some(format!(
        "{}:{}",
        nix::sys::stat::major(d),
        nix::sys::stat::minor(d)
    ))
}

/// Where `path` (resolved) is in its file system: the device and the directory
/// within it, by the mount that shows it.
pub fn place_in(path: &Path, dev: &str, mounts: &[Mount]) -> Option<PathBuf> {
    let m = mounts
        .iter()
        .filter(|m| m.dev == dev && path.starts_with(&m.point))
        .max_by_key(|m| m.point.components().count())?;
    Some(m.root.join(path.strip_prefix(&m.point).ok()?))
}

/// The other names `path` has through other mounts of its file system (a bind
/// mount of a directory above it, a second mount of the same device).
pub fn aliases_in(path: &Path, dev: &str, mounts: &[Mount]) -> Vec<PathBuf> {
    let Some(inner) = place_in(path, dev, mounts) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.dev == dev && inner.starts_with(&m.root))
        .filter_map(|m| Some(m.point.join(inner.strip_prefix(&m.root).ok()?)))
        .filter(|a| a != path)
        .collect();
    out.sort();
    out.dedup();
    out
}

fn aliases(path: &Path, mounts: &[Mount]) -> Vec<PathBuf> {
    match dev_of(path) {
        Some(dev) => aliases_in(path, &dev, mounts),
        None => Vec::new(),
    }
}

/// The mounts that show part of the home directory under another name, and what of
/// each to cover: the home's other name where a mount shows all of it, or the whole
/// mount where it shows a part (unless that part may be read).
pub fn home_aliases(
    home: &Path,
    dev: &str,
    mounts: &[Mount],
    readable: &[PathBuf],
) -> Vec<PathBuf> {
    let Some(inner) = place_in(home, dev, mounts) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for m in mounts.iter().filter(|m| m.dev == dev) {
        if let Ok(rest) = inner.strip_prefix(&m.root) {
            // All of the home, under this mount: covered unless this is its own name.
            let other = m.point.join(rest);
            if other != home {
                out.push(other);
            }
        } else if let Ok(part) = m.root.strip_prefix(&inner) {
            // A part of the home mounted here: covered unless it is where that part
            // is anyway, or a part commands may read.
            let real = home.join(part);
            if m.point != real && !readable.iter().any(|r| real.starts_with(r)) {
                out.push(m.point.clone());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn err(what: &str, path: &Path, e: nix::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

fn write_map(file: &str, text: &str) -> Result<(), String> {
    std::fs::write(file, text).map_err(|e| format!("{file}: {e}"))
}

/// Leaves the caller's namespaces: after this, the next child is PID 1 of a new PID
/// namespace, with a private copy of the mounts.
fn unshare_all() -> Result<(), String> {
    let (uid, gid) = (getuid(), getgid());
    // Its own network too: loopback only, the world through airsd's proxy.
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNET;
    if !uid.is_root() {
        flags |= CloneFlags::CLONE_NEWUSER;
    }
    unshare(flags).map_err(|e| format!("unshare: {e}"))?;
    if !uid.is_root() {
        // The same ids inside: files keep their owners, and the command no rights.
        write_map("/proc/self/setgroups", "deny")?;
        write_map("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write_map("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
    }
    // Nothing done below reaches the caller's mounts.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("making the mounts private: {e}"))
}

/// The flags a read-only remount of the mount at `path` must keep (a user namespace
/// may not drop `nosuid`, `nodev` … that the mount it came from has).
fn kept_flags(path: &Path) -> MsFlags {
    let mut out = MsFlags::empty();
    let Ok(st) = statvfs(path) else { return out };
    let f = st.flags();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(fs) {
            out |= ms;
        }
    }
    out
}

/// Binds `source` read-only at `target`; what the sandbox mounted below it before
/// (a writable place inside a read-only one: a task's worktree inside the checkout)
/// stays as it was.
fn bind_read_only(source: &Path, target: &Path) -> Result<(), String> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err("binding", target, e))?;
    let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept_flags(target);
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
        .map_err(|e| err("making read-only", target, e))
}

fn hide(path: &Path, shown: &[(PathBuf, std::fs::File)]) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else {
        // Gone since the list was made: nothing to hide.
        return Ok(());
    };
    let inside: Vec<&(PathBuf, std::fs::File)> = shown
        .iter()
        .filter(|(s, _)| s.starts_with(path) && s != path)
        .collect();
    if meta.is_dir() && !inside.is_empty() {
        return hide_but(path, &inside);
    }
    if meta.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,nr_inodes=2,mode=0555"),
        )
        .map_err(|e| err("hiding", path, e))
    } else {
        bind_read_only(Path::new("/dev/null"), path)
    }
}

/// Binds the directory `from` read-only onto the directory `onto`, each opened
/// following no link (a link planted at either is skipped, never followed).
fn lend(from: &Path, onto: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let open = |p: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(p)
    };
    let (Ok(source), Ok(target)) = (open(from), open(onto)) else {
        return Ok(());
    };
    let at = |f: &std::fs::File| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
    mount(
        Some(at(&source).as_path()),
        at(&target).as_path(),
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err("lending", onto, e))?;
    let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept_flags(from);
    mount(None::<&str>, onto, None::<&str>, flags, None::<&str>)
        .map_err(|e| err("making read-only", onto, e))
}

/// Covers the directory `path` with an empty stand-in that holds only the way to each
/// of `shown` (directories below it, opened before): each is bound back at its own
/// path, as it was (writable where it was), and the stand-in is then made read-only.
fn hide_but(path: &Path, shown: &[&(PathBuf, std::fs::File)]) -> Result<(), String> {
    use std::os::fd::AsRawFd as _;
    let depth: usize = shown
        .iter()
        .filter_map(|(s, _)| s.strip_prefix(path).ok())
        .map(|r| r.components().count())
        .sum();
    let options = format!("size=16k,nr_inodes={},mode=0555", depth + 4);
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("tmpfs"),
        path,
        Some("tmpfs"),
        flags,
        Some(options.as_str()),
    )
    .map_err(|e| err("hiding", path, e))?;
    for (s, dir) in shown {
        std::fs::create_dir_all(s).map_err(|e| format!("making {}: {e}", s.display()))?;
        // The directory as opened before the stand-in covered it.
        let source = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        mount(
            Some(source.as_path()),
            s.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| err("showing", s, e))?;
    }
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags,
        Some(options.as_str()),
    )
    .map_err(|e| err("making read-only", path, e))
}

/// The mounts of the command's namespace, made by its PID 1 before it becomes the
/// command.
fn mount_views(views: &Views, writable: &[PathBuf]) -> Result<(), String> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| format!("mounting a fresh /proc: {e}"))?;
    let before = mounts();
    // Every mount read-only, then the writable places writable again: a change of a
    // file's mode, owner, times or attributes outside them fails, whichever name it
    // is reached by (Landlock does not cover those).
    for m in &before {
        if m.point.starts_with("/proc") {
            continue;
        }
        let flags =
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept_flags(&m.point);
        // A mount hidden under another cannot be reached, nor needs to be.
        let _ = mount(None::<&str>, &m.point, None::<&str>, flags, None::<&str>);
    }
    for w in writable {
        if !w.exists() {
            continue;
        }
        mount(
            Some(w.as_path()),
            w.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| err("binding", w, e))?;
        let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | kept_flags(w);
        mount(None::<&str>, w.as_path(), None::<&str>, flags, None::<&str>)
            .map_err(|e| err("making writable", w, e))?;
    }
    for p in &views.pinned {
        if p.is_dir() {
            mount(
                Some(p),
                p,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .map_err(|e| err("pinning", p, e))?;
        }
    }
    // Copies without their secrets over the originals, while the copies can be
    // reached (they live in air's state, hidden below).
    for (copy, original) in &views.masked {
        if copy.is_file() && original.exists() {
            bind_read_only(copy, original)?;
        }
    }
    for (from, onto) in &views.lent {
        lend(from, onto)?;
    }
    // What is read-only or hidden is so under every name it has.
    let all = mounts();
    // Outer places first: a read-only place inside another is then read-only where
    // the command reaches it.
    let mut read_only = views.read_only.clone();
    read_only.sort_by_key(|p| p.components().count());
    for p in &read_only {
        for q in std::iter::once(p.clone()).chain(aliases(p, &all)) {
            if q.exists() {
                bind_read_only(&q, &q)?;
            }
        }
    }
    let mut hidden: Vec<PathBuf> = Vec::new();
    for p in &views.hidden {
        hidden.push(p.clone());
        hidden.extend(aliases(p, &all));
    }
    if let Some(home) = &views.home {
        if let Some(dev) = dev_of(home) {
            hidden.extend(home_aliases(home, &dev, &all, &views.home_read));
        }
    }
    // What stays shown inside a hidden directory, opened as it is now (writable
    // where it is): reached by its path no more once the stand-in covers it.
    let mut shown: Vec<(PathBuf, std::fs::File)> = Vec::new();
    for p in &views.shown {
        use std::os::unix::fs::OpenOptionsExt as _;
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(p)
            .map_err(|e| format!("opening {}: {e}", p.display()))?;
        shown.push((p.clone(), dir));
    }
    // The directories that hold a shown one first: what is hidden inside a shown
    // one is then hidden where the command sees it.
    hidden.sort_by_key(|h| !shown.iter().any(|(s, _)| s.starts_with(h) && s != h));
    for p in &hidden {
        hide(p, &shown)?;
    }
    // The working directory was entered before the mounts: entered again by its
    // path, it is what the command may see (a stand-in, if it was hidden).
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd)
            .map_err(|e| format!("entering {} again: {e}", cwd.display()))?;
    }
    Ok(())
}

/// Capabilities a root command gives up, so it cannot undo its namespace, read files
/// by handle past the stand-ins, reach raw memory or devices, load code into the
/// kernel, give files away or change what it does not own by right, make a file
/// immutable, set the clock, or reach the network below its sockets. A root
/// command's own files stay its own.
const DROPPED_CAPS: &[libc::c_int] = &[
    0,  // CAP_CHOWN
    3,  // CAP_FOWNER
    4,  // CAP_FSETID
    9,  // CAP_LINUX_IMMUTABLE
    13, // CAP_NET_RAW
    25, // CAP_SYS_TIME
    26, // CAP_SYS_TTY_CONFIG
    24, // CAP_SYS_RESOURCE
    23, // CAP_SYS_NICE
    31, // CAP_SETFCAP
    29, // CAP_AUDIT_WRITE
    35, // CAP_WAKE_ALARM
    36, // CAP_BLOCK_SUSPEND
    28, // CAP_LEASE
    20, // CAP_SYS_PACCT
    11, // CAP_NET_BROADCAST
    37, // CAP_AUDIT_READ
    40, // CAP_CHECKPOINT_RESTORE
    21, // CAP_SYS_ADMIN
    2,  // CAP_DAC_READ_SEARCH (open_by_handle_at)
    19, // CAP_SYS_PTRACE
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    27, // CAP_MKNOD
    18, // CAP_SYS_CHROOT
    22, // CAP_SYS_BOOT
    8,  // CAP_SETPCAP
    33, // CAP_MAC_ADMIN
    32, // CAP_MAC_OVERRIDE
    34, // CAP_SYSLOG
    38, // CAP_PERFMON
    39, // CAP_BPF
    30, // CAP_AUDIT_CONTROL
    12, // CAP_NET_ADMIN
];

#[allow(unsafe_code)]
fn drop_caps() -> Result<(), String> {
    if !getuid().is_root() {
        // A non-root command holds no capabilities once it execs.
        return Ok(());
    }
    // SAFETY: prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL) takes plain integers.
    let _ = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    for &cap in DROPPED_CAPS {
        // SAFETY: prctl(PR_CAPBSET_DROP) takes plain integers and touches no memory
        // of ours.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            // EINVAL: a capability this kernel does not know.
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(format!("dropping capability {cap}: {e}"));
            }
        }
    }
    Ok(())
}

/// The kernel's key retention service is not the command's: a key in the user's
/// keyring (`keyctl`), a token a login put there, are out of its reach. A seccomp
/// filter answers `keyctl`, `add_key` and `request_key` with EPERM, and any call of
/// another architecture's numbering (a 32-bit program's, x32's) with ENOSYS, so
/// they cannot be reached by another number. (Landlock's `restrict_self` after it
/// sets no_new_privs, which the filter needs.)
#[allow(unsafe_code)]
fn deny_keyring() -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return Ok(());
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
        const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
        const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
        const RET_K: u16 = 0x06; // BPF_RET | BPF_K
        const ALLOW: u32 = 0x7fff_0000;
        const ERRNO: u32 = 0x0005_0000;
        let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
        let denied = [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key];
        let mut prog = vec![
            // seccomp_data.arch
            op(LD_W_ABS, 0, 0, 4),
            op(JEQ_K, 1, 0, ARCH),
            op(RET_K, 0, 0, ERRNO | libc::ENOSYS as u32),
            // seccomp_data.nr
            op(LD_W_ABS, 0, 0, 0),
            // x32's numbers (on x86_64) are another numbering.
            op(JGE_K, 0, 1, 0x4000_0000),
            op(RET_K, 0, 0, ERRNO | libc::ENOSYS as u32),
        ];
        for (i, nr) in denied.iter().enumerate() {
            // To the EPERM at the end when equal.
            let to_deny = u8::try_from(denied.len() - i).unwrap_or(0);
            prog.push(op(JEQ_K, to_deny, 0, *nr as u32));
        }
        prog.push(op(RET_K, 0, 0, ALLOW));
        prog.push(op(RET_K, 0, 0, ERRNO | libc::EPERM as u32));
        let fprog = libc::sock_fprog {
            len: u16::try_from(prog.len()).unwrap_or(0),
            filter: prog.as_mut_ptr(),
        };
        // SAFETY: PR_SET_NO_NEW_PRIVS takes integers; PR_SET_SECCOMP reads the program
        // `fprog` points at, which lives across the call.
        let rc = unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &fprog as *const libc::sock_fprog as libc::c_ulong,
                0,
                0,
            )
        };
        if rc != 0 {
            return Err(format!(
                "a seccomp filter for the keyring: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

/// Asks the kernel to kill this process when its parent goes (airsd spawns the
/// launcher from a runtime thread that lives as long as the daemon does). A parent
/// already gone is an error: adopted by init, or not `expected` any more (adopted by
/// a subreaper).
#[allow(unsafe_code)]
pub fn die_with_parent(expected: Option<i32>) -> Result<(), String> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no memory of
    // ours.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(format!(
            "cannot tie the command to airsd: {}",
            std::io::Error::last_os_error()
        ));
    }
    let parent = nix::unistd::getppid();
    let gone = match expected {
        Some(pid) => parent != nix::unistd::Pid::from_raw(pid),
        None => parent == nix::unistd::Pid::from_raw(1),
    };
    if gone {
        return Err("airsd is gone; the command is not run".into());
    }
    Ok(())
}

/// Brings the namespace's loopback up (a new network namespace has it down).
#[allow(unsafe_code)]
fn loopback_up() -> Result<(), String> {
    use std::os::fd::AsRawFd as _;
    let sock = std::net::UdpSocket::bind("0.0.0.0:0")
        .map_err(|e| format!("a socket to bring loopback up: {e}"))?;
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, b) in req.ifr_name.iter_mut().zip(b"lo") {
        *slot = *b as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write the ifreq given, which
    // lives for both calls.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(format!(
                "reading loopback's flags: {}",
                std::io::Error::last_os_error()
            ));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(format!(
                "bringing loopback up: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Hands every connection made to `door` to airsd's proxy (a descriptor with one
/// byte) until `child` ends; stops handing over when the proxy is gone.
fn serve_door(
    child: nix::unistd::Pid,
    door: &std::net::TcpListener,
    proxy: &std::os::unix::net::UnixStream,
) {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    use std::os::fd::{AsFd as _, AsRawFd as _};
    if door.set_nonblocking(true).is_err() {
        return;
    }
    let pidfd = pidfd(child);
    loop {
        let (door_ready, child_ended) = {
            let mut fds = vec![PollFd::new(door.as_fd(), PollFlags::POLLIN)];
            if let Some(p) = &pidfd {
                fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
            }
            // Without a pidfd (before Linux 5.3) the child's end is looked for
            // between short waits.
            let timeout = if pidfd.is_some() {
                PollTimeout::NONE
            } else {
                PollTimeout::from(50u16)
            };
            match nix::poll::poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return,
            }
            let ready = |i: usize| {
                fds.get(i)
                    .and_then(PollFd::revents)
                    .is_some_and(|r| !r.is_empty())
            };
            (ready(0), ready(1))
        };
        if door_ready {
            while let Ok((conn, _)) = door.accept() {
                let fds = [conn.as_raw_fd()];
                let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
                let iov = [std::io::IoSlice::new(&[1])];
                let sent = nix::sys::socket::sendmsg::<()>(
                    proxy.as_raw_fd(),
                    &iov,
                    &cmsg,
                    nix::sys::socket::MsgFlags::empty(),
                    None,
                );
                if sent.is_err() {
                    return;
                }
            }
        }
        let ended = child_ended
            || (pidfd.is_none()
                && matches!(
                    // WNOWAIT: looked at, not reaped (the caller waits for it).
                    nix::sys::wait::waitid(
                        nix::sys::wait::Id::Pid(child),
                        nix::sys::wait::WaitPidFlag::WNOHANG
                            | nix::sys::wait::WaitPidFlag::WNOWAIT
                            | nix::sys::wait::WaitPidFlag::WEXITED
                    ),
                    Ok(s) if s != WaitStatus::StillAlive
                ));
        if ended {
            return;
        }
    }
}

/// A descriptor that becomes readable when `pid` ends (`pidfd_open`), where the
/// kernel has it.
#[allow(unsafe_code)]
fn pidfd(pid: nix::unistd::Pid) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd as _;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the kernel just made this descriptor for this process alone.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Whether the launcher still holds its end of `alive` (a read finds no end of file).
fn launcher_lives(alive: &std::os::fd::OwnedFd) -> Result<(), String> {
    use std::os::fd::AsFd as _;
    let flags = nix::fcntl::fcntl(alive.as_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .map_err(|e| format!("fcntl: {e}"))?;
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(alive.as_fd(), nix::fcntl::FcntlArg::F_SETFL(flags))
        .map_err(|e| format!("fcntl: {e}"))?;
    let mut byte = [0u8; 1];
    match nix::unistd::read(alive.as_fd(), &mut byte) {
        Ok(0) => Err("airsd is gone; the command is not run".into()),
        Ok(_) | Err(nix::errno::Errno::EAGAIN) => Ok(()),
        Err(e) => Err(format!("cannot tell whether the launcher lives: {e}")),
    }
}

/// Moves the launcher into the command's namespaces. Returns in the child that is
/// PID 1 there, with the views mounted and the capabilities dropped; the launcher
/// itself waits for that child and exits as it did (this function does not return
/// in it).
#[allow(unsafe_code)]
pub fn enter(
    views: &Views,
    writable: &[PathBuf],
    proxy: Option<std::os::unix::net::UnixStream>,
) -> Result<(), String> {
    unshare_all()?;
    loopback_up()?;
    // The proxy's door in the command's network: what connects to it is handed to
    // airsd, which the launcher reached before it left airsd's network.
    let door = match &proxy {
        Some(_) => Some(
            std::net::TcpListener::bind(super::PROXY_LISTEN)
                .map_err(|e| format!("listening on {} for the proxy: {e}", super::PROXY_LISTEN))?,
        ),
        None => None,
    };
    // The launcher holds the write end while it lives: the child, whose parent is
    // outside its namespace (getppid() says 0), learns from the read end whether the
    // launcher died before the child tied its life to it.
    let (alive, held) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the launcher is single-threaded (a fresh `airsd __sandbox` process
    // that started no threads), so the child may do anything.
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            drop(held);
            drop(door);
            drop(proxy);
            // PID 1 of the namespace dies with the launcher, and everything in the
            // namespace with it.
            die_with_parent(None)?;
            launcher_lives(&alive)?;
            drop(alive);
            mount_views(views, writable)?;
            drop_caps()?;
            deny_keyring()
        }
        ForkResult::Parent { child } => {
            // No thread can be made here (the launcher's children are in another PID
            // namespace than itself): the door is served between waits.
            if let (Some(door), Some(proxy)) = (door, proxy) {
                serve_door(child, &door, &proxy);
            }
            let code = loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, code)) => break code,
                    Ok(WaitStatus::Signaled(_, sig, _)) => {
                        // End the same way, so the caller sees the signal.
                        // SAFETY: restoring the default action installs no handler.
                        let _ = unsafe {
                            nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl)
                        };
                        let _ = nix::sys::signal::raise(sig);
                        break 128 + sig as i32;
                    }
                    Ok(_) => continue,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => {
                        eprintln!("airsd sandbox: waiting for the command: {e}");
                        break 126;
                    }
                }
            };
            std::process::exit(code);
        }
    }
}
