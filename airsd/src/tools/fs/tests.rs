//! The tests of `fs`.

#![allow(clippy::unwrap_used)]
use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ledger: ReadLedger,
    scope: crate::tools::scope::Scope,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    Fixture {
        _dir: dir,
        root,
        ledger: ReadLedger::default(),
        scope: Default::default(),
    }
}

impl Fixture {
    fn ctx<'a>(&'a self, agent: &'a str) -> FsContext<'a> {
        FsContext {
            root: &self.root,
            agent_id: agent,
            ledger: &self.ledger,
            scope: &self.scope,
            perm: crate::tools::permission::test_permits(&self.root),
            launcher: crate::launcher::test_launcher(&self.root),
            overlay: None,
        }
    }
    fn put(&self, name: &str, bytes: &[u8]) {
        let p = self.root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    fn get(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.root.join(name)).unwrap()
    }
    fn read(&self, agent: &str, name: &str) -> ReadOutput {
        read(
            &self.ctx(agent),
            &ReadInput {
                path: name.into(),
                offset: None,
                limit: None,
            },
        )
        .unwrap()
    }
    fn edit(
        &self,
        agent: &str,
        name: &str,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditOutput, ToolError> {
        edit(
            &self.ctx(agent),
            &EditInput {
                path: name.into(),
                old_string: old.into(),
                new_string: new.into(),
                replace_all: all,
            },
        )
    }
}

#[test]
fn what_is_not_a_regular_file_is_refused_at_once() {
    let f = fixture();
    let ctx = f.ctx("a");
    let read_of = |path: &str| {
        read(
            &ctx,
            &ReadInput {
                path: path.into(),
                offset: None,
                limit: None,
            },
        )
    };
    let fifo = f.root.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(f.root.join("sock")).unwrap();
    // A 20 GB sparse file allocates nothing and is seen as binary at once.
    let sparse = std::fs::File::create(f.root.join("sparse")).unwrap();
    sparse.set_len(20 * 1024 * 1024 * 1024).unwrap();
    let t0 = std::time::Instant::now();
    for (path, why) in [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("fifo", "a FIFO"),
        ("sock", "a socket"),
        ("/proc/self/environ", "/proc or /sys"),
        ("/proc/self/status", "/proc or /sys"),
        ("/sys/kernel/uevent_seqnum", "/proc or /sys"),
        ("sparse", "a binary file"),
    ] {
        let e = read_of(path).unwrap_err();
        assert!(e.0.contains(why), "{path}: {e}");
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    // The writing tools refuse them too, before anything is read.
    let e = write(
        &ctx,
        &WriteInput {
            path: "/dev/zero".into(),
            content: "x".into(),
        },
    )
    .unwrap_err();
    assert!(e.0.contains("a character device"), "{e}");
    let e = edit(
        &ctx,
        &EditInput {
            path: "fifo".into(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
        },
    )
    .unwrap_err();
    assert!(e.0.contains("a FIFO"), "{e}");
}

#[test]
fn a_long_file_is_paged_and_one_endless_line_is_cut() {
    let f = fixture();
    let mut text = String::new();
    for i in 1..=300_000 {
        text.push_str(&format!("line {i}\n"));
    }
    f.put("big.txt", text.as_bytes());
    let out = read(
        &f.ctx("a"),
        &ReadInput {
            path: "big.txt".into(),
            offset: Some(150_000),
            limit: Some(3),
        },
    )
    .unwrap();
    assert_eq!(out.total_lines, 300_000);
    assert_eq!(
        out.content,
        "150000\tline 150000\n150001\tline 150001\n150002\tline 150002\n"
    );
    assert_eq!(out.sha256, hex(&sha256(text.as_bytes())));
    f.put("wide.txt", &vec![b'x'; 5 * 1024 * 1024]);
    let out = f.read("a", "wide.txt");
    assert_eq!(out.total_lines, 1);
    assert!(
        out.content.ends_with(" … [line truncated]\n"),
        "{}",
        &out.content[out.content.len() - 40..]
    );
    assert!(out.content.len() < MAX_LINE_CHARS + 40);
}

#[test]
fn read_numbers_lines_pages_and_refuses_binary() {
    let f = fixture();
    f.put("a.txt", b"one\ntwo\nthree\n");
    let out = f.read("x", "a.txt");
    assert_eq!(out.content, "1\tone\n2\ttwo\n3\tthree\n");
    assert_eq!(out.total_lines, 3);
    let page = read(
        &f.ctx("x"),
        &ReadInput {
            path: "a.txt".into(),
            offset: Some(2),
            limit: Some(1),
        },
    )
    .unwrap();
    assert_eq!(page.content, "2\ttwo\n");
    assert_eq!(
        page.notes,
        ["showing lines 2–2 of 3; continue with offset 3"]
    );
    f.put("long.txt", format!("{}\n", "x".repeat(5000)).as_bytes());
    assert!(f
        .read("x", "long.txt")
        .content
        .ends_with("… [line truncated]\n"));
    f.put("bin", b"\x7fELF\x00\x01");
    let e = read(
        &f.ctx("x"),
        &ReadInput {
            path: "bin".into(),
            offset: None,
            limit: None,
        },
    )
    .unwrap_err();
    assert!(e.0.contains("a binary file (6 bytes)"), "{e}");
    f.put("latin1.txt", b"caf\xe9\n");
    let out = f.read("x", "latin1.txt");
    assert!(out.notes[0].contains("not valid UTF-8"));
}

#[test]
fn writes_need_a_read_of_the_current_content() {
    let f = fixture();
    let w = |agent: &str, name: &str, content: &str| {
        write(
            &f.ctx(agent),
            &WriteInput {
                path: name.into(),
                content: content.into(),
            },
        )
    };
    let created = w("x", "new/dir/file.txt", "hello\n").unwrap();
    assert!(created.created);
    assert_eq!(f.get("new/dir/file.txt"), b"hello\n");
    // The writer may write again (it knows the content); another agent may not.
    w("x", "new/dir/file.txt", "hello again\n").unwrap();
    let e = w("y", "new/dir/file.txt", "mine\n").unwrap_err();
    assert!(
        e.0.contains("read the file with fs_read before changing it"),
        "{e}"
    );
    f.read("y", "new/dir/file.txt");
    f.put("new/dir/file.txt", b"changed behind its back\n");
    let e = w("y", "new/dir/file.txt", "mine\n").unwrap_err();
    assert!(e.0.contains("the file changed since you read it"), "{e}");
    f.read("y", "new/dir/file.txt");
    let out = w("y", "new/dir/file.txt", "mine\n").unwrap();
    assert!(out
        .diff
        .unwrap()
        .contains("-changed behind its back\n+mine\n"));
}

#[test]
fn edits_are_exact_unique_and_all_or_nothing() {
    let f = fixture();
    f.put("m.rs", b"let a = 1;\nlet b = 1;\n");
    assert!(f
        .edit("x", "m.rs", "a", "z", false)
        .unwrap_err()
        .0
        .contains("read the file"));
    f.read("x", "m.rs");
    let e = f.edit("x", "m.rs", "= 1", "= 2", false).unwrap_err();
    assert!(e.0.contains("occurs 2 times"), "{e}");
    let e = f.edit("x", "m.rs", "nope", "x", false).unwrap_err();
    assert!(e.0.contains("was not found"), "{e}");
    let e = f.edit("x", "m.rs", "a", "a", false).unwrap_err();
    assert!(e.0.contains("are the same"), "{e}");
    let out = f.edit("x", "m.rs", "= 1", "= 2", true).unwrap();
    assert_eq!(out.replacements, 2);
    assert!(
        out.diff.contains("-let a = 1;\n") && out.diff.contains("+let a = 2;\n"),
        "{}",
        out.diff
    );
    // A list where the second edit fails changes nothing.
    let before = f.get("m.rs");
    let e = multi_edit(
        &f.ctx("x"),
        &MultiEditInput {
            path: "m.rs".into(),
            edits: vec![
                Edit {
                    old_string: "let a".into(),
                    new_string: "let c".into(),
                    replace_all: false,
                },
                Edit {
                    old_string: "missing".into(),
                    new_string: "x".into(),
                    replace_all: false,
                },
            ],
        },
    )
    .unwrap_err();
    assert!(e.0.contains("edit 2: old_string was not found"), "{e}");
    assert_eq!(f.get("m.rs"), before);
}

#[test]
fn bytes_outside_an_edit_are_kept() {
    let f = fixture();
    f.put("crlf.txt", b"first\r\nsecond\r\nthird\r\n");
    f.read("x", "crlf.txt");
    f.edit("x", "crlf.txt", "first\nsecond", "1st\n2nd", false)
        .unwrap();
    assert_eq!(f.get("crlf.txt"), b"1st\r\n2nd\r\nthird\r\n");
    f.put("latin1.txt", b"caf\xe9 = 1\nna\xefve = 2\n");
    f.read("x", "latin1.txt");
    f.edit("x", "latin1.txt", "= 2", "= 3", false).unwrap();
    assert_eq!(f.get("latin1.txt"), b"caf\xe9 = 1\nna\xefve = 3\n");
}

#[test]
fn paths_resolve_physically() {
    let f = fixture();
    let outside = tempfile::tempdir().unwrap();
    let out = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::write(out.join("secret"), b"s").unwrap();
    std::os::unix::fs::symlink(&out, f.root.join("link")).unwrap();
    let ctx = f.ctx("x");
    // A link is followed to where it leads: the engine judges that place.
    assert_eq!(ctx.resolve("link/secret").unwrap(), out.join("secret"));
    assert_eq!(ctx.resolve("link/new-file").unwrap(), out.join("new-file"));
    assert_eq!(
        ctx.resolve("../x").unwrap(),
        f.root.parent().unwrap().join("x")
    );
    assert!(ctx.resolve("a/../../x").unwrap_err().0.contains("`..`"));
    assert_eq!(
        ctx.resolve("src/new.rs").unwrap(),
        f.root.join("src/new.rs")
    );
    assert!(ctx.resolve("").is_err());
}
