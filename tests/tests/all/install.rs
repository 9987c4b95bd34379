//! The release tarball (`scripts/release`) installed into a fresh prefix: with only
//! its `bin/` (and the system's) on PATH and no source tree around, `air` finds its
//! daemon and worker beside itself and carries out the example plan from the
//! recording shipped with it.

use std::path::Path;
use std::process::Command;

use air_tests::bin;

#[test]
fn the_tarball_installs_anywhere_and_runs_the_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let work = tempfile::tempdir().unwrap();
    let dist = work.path().join("dist");
    let built = bin("air");
    let out = Command::new(root.join("scripts/release"))
        .args(["--bin-dir"])
        .arg(built.parent().unwrap())
        .arg("--out")
        .arg(&dist)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tarball = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let name = Path::new(&tarball)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".tar.gz")
        .to_string();
    assert!(name.starts_with("air-0.1.0-"), "{name}");
    let prefix = work.path().join("opt");
    std::fs::create_dir_all(&prefix).unwrap();
    let untar = Command::new("tar")
        .args(["-xzf", &tarball, "-C"])
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(untar.success());
    let installed = prefix.join(&name);
    for f in [
        "bin/air",
        "bin/airsd",
        "bin/air-worker",
        "resources/models.yaml",
        "systemd/airsd@.service",
        "launchd/com.air.airsd.plist",
        // What help and the README point to.
        "docs/plan-format.md",
        "examples/wordcount/plan.md",
        "examples/run",
        "LICENSE",
    ] {
        assert!(
            installed.join(f).exists(),
            "{f} is missing from the tarball"
        );
    }

    // The example, copied away from the source tree.
    let project = work.path().join("wordcount");
    let copy = Command::new("cp")
        .arg("-r")
        .arg(root.join("examples/wordcount"))
        .arg(&project)
        .status()
        .unwrap();
    assert!(copy.success());
    let air = |args: &[&str]| {
        Command::new(installed.join("bin/air"))
            .args(args)
            .current_dir(&project)
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    installed.join("bin").display()
                ),
            )
            .env("HOME", work.path())
            .env("AIR_HOME", work.path().join("air-home"))
            .output()
            .unwrap()
    };
    let show = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    // A git repository, as `examples/run` makes it: each task works in its own
    // worktree.
    air_tests::git(&project, &["init", "-q"]);
    air_tests::git(&project, &["add", "-A"]);
    air_tests::git(&project, &["commit", "-qm", "example"]);
    let out = air(&["init", "--no-model"]);
    assert!(out.status.success(), "{}", show(&out));
    let out = air(&["run", "--plan", "plan.md", "--replay", "recording"]);
    let _ = air(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(show(&out).contains("completed"), "{}", show(&out));
}
