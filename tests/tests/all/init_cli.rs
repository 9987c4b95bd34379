//! `air init` through the real binary: in a fresh git repository, outside a project,
//! and in a directory it cannot write.

use std::path::Path;
use std::process::{Command, Output};

use air_tests::bin;
use air_tests::git;

fn air(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin("air"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn air_init_in_a_fresh_git_repo() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    let out = air(root, &["init", "--no-model"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("initialized air project"), "{stdout}");
    assert!(
        stdout.contains("added .air/local/ to .gitignore"),
        "{stdout}"
    );
    for d in [
        "shared/rules",
        "shared/plan",
        "local/sessions",
        "local/state",
        "local/backups",
        "local/locks",
        "local/tmp",
        "local/workspaces",
        "local/logs",
    ] {
        assert!(root.join(".air").join(d).is_dir(), "{d}");
    }
    let project: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".air/shared/project.json")).unwrap())
            .unwrap();
    assert_eq!(project["schema_version"], 1);
    assert!(uuid_like(project["project_id"].as_str().unwrap()));

    // git sees the shared part and ignores the local part.
    std::fs::write(root.join(".air/local/state/x"), "x").unwrap();
    let status = String::from_utf8(git(root, &["status", "--porcelain", "-uall"]).stdout).unwrap();
    assert!(status.contains(".air/shared/project.json"), "{status}");
    assert!(!status.contains(".air/local"), "{status}");

    // Twice is harmless: same id, .gitignore unchanged.
    let gitignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    let again = air(root, &["init", "--no-model"]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("already initialized"));
    let project2: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".air/shared/project.json")).unwrap())
            .unwrap();
    assert_eq!(project, project2);
    assert_eq!(
        std::fs::read_to_string(root.join(".gitignore")).unwrap(),
        gitignore
    );

    // Commands find the root from a subdirectory, as git does.
    let sub = root.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = air(&sub, &["root"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        root.to_str().unwrap()
    );
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|&c| c == '-').count() == 4
}

#[test]
fn outside_a_project_commands_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = air(dir.path(), &["root"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not inside an air project") && stderr.contains("air init"),
        "{stderr}"
    );
    let out = air(dir.path(), &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn air_init_in_a_non_writable_directory_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("locked");
    std::fs::create_dir(&target).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o555)).unwrap();
    // root ignores permission bits: run as an unprivileged user then.
    let is_root = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout)
        .unwrap()
        .trim()
        == "0";
    let out = if is_root {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin("air"))
            .args(["init", "--no-model", "--path"])
            .arg(&target)
            .current_dir("/")
            .output()
            .unwrap()
    } else {
        Command::new(bin("air"))
            .args(["init", "--no-model", "--path"])
            .arg(&target)
            .output()
            .unwrap()
    };
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(
        stderr.contains(&target.join(".air").display().to_string()),
        "names the path: {stderr}"
    );
    assert!(!target.join(".air").exists());
}

#[test]
fn air_init_scans_and_the_profile_is_detected_then_corrected_by_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for f in ["CMakeLists.txt", "src/a.cpp", "src/b.hpp", "tests/t.cpp"] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x\n").unwrap();
    }
    let out = air(root, &["init", "--no-model"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    // CMakeLists.txt, the two sources, the test and the .gitignore air init wrote.
    assert!(said.contains("scanned 5 files in 2 directories"), "{said}");
    for line in [
        "project profile (detected, not confirmed):",
        "  languages    C++",
        "  build        cmake -S . -B build && cmake --build build",
        "  test         ctest --test-dir build --output-on-failure",
        "  source_dirs  src",
        "  test_dirs    tests",
        "  conventions  unknown",
        "`air profile confirm` says it is right",
    ] {
        assert!(said.contains(line), "{line:?} missing from {said}");
    }
    let read = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(root.join(".air/shared/project.json")).unwrap())
            .unwrap()
    };
    assert_eq!(read()["profile"]["origin"], "detected");
    let scan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".air/local/state/scan.json")).unwrap())
            .unwrap();
    assert_eq!(scan["complete"], true);
    assert_eq!(scan["extensions"]["cpp"], 2);

    // The user corrects a field: the profile is theirs from then on.
    let out = air(
        root,
        &[
            "profile",
            "set",
            "build",
            "cmake --preset dev",
            "cmake --build --preset dev",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = read();
    assert_eq!(p["profile"]["origin"], "confirmed");
    assert_eq!(p["profile"]["build"][1], "cmake --build --preset dev");
    // `--json` shows the same profile, as read commands do.
    let shown = air(root, &["profile", "show", "--json"]);
    assert!(shown.status.success());
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown, p["profile"]);
    let out = air(root, &["profile", "set", "compiler", "gcc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("no profile field `compiler`; the fields are languages, build, test"));
    let out = air(root, &["profile", "unset", "test"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("  test         unknown"));

    // A rescan sees the new file and keeps what the user said. (Directories that
    // changed just before a scan are read again by the next: made older, one scan
    // settles them.)
    for d in ["", "src", "tests"] {
        std::fs::File::open(root.join(d))
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(10))
            .unwrap();
    }
    assert!(air(root, &["profile", "scan", "--no-model"])
        .status
        .success());
    std::fs::write(root.join("src/c.cpp"), "x\n").unwrap();
    let out = air(root, &["profile", "scan", "--no-model"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("  build        cmake --preset dev; cmake --build --preset dev"));
    let scan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".air/local/state/scan.json")).unwrap())
            .unwrap();
    assert_eq!(scan["extensions"]["cpp"], 3);
    assert_eq!(scan["dirs_read"], 1, "only src/ was read again");
}
