//! What air and a project need installed (D-045), through the real binaries: the
//! read-only check at a project's first use, `air doctor` listing each dependency with
//! the exact command that installs it, and `air doctor --fix` / `air setup` running a
//! command only after a yes. The machine is a PATH of our own, whose package manager
//! writes what it was asked into a file and installs by putting a program on that PATH.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use air_tests::{bin, output_with_input};

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        // Outside the temporary directories: air runs no program from those.
        let base = air_proto::program::trusted_scratch(Path::new(env!("CARGO_TARGET_TMPDIR")))
            .expect("a directory outside the temporary ones");
        let dir = tempfile::tempdir_in(base).unwrap();
        let bin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        for real in ["git", "bash", "tmux"] {
            if let Some(p) = which(real) {
                std::os::unix::fs::symlink(p, bin_dir.join(real)).unwrap();
            }
        }
        for tool in [
            "cmake",
            "ctest",
            "make",
            "g++",
            "clang++",
            "clang-tidy",
            "clangd",
        ] {
            script(&bin_dir.join(tool), &format!("echo '{tool} version 9.1.0'"));
        }
        // The package manager: what it was asked, and the program it installs.
        let asked = dir.path().join("asked");
        script(&bin_dir.join("sudo"), "exec \"$@\"");
        script(
            &bin_dir.join("apt-get"),
            &format!(
                "echo \"$*\" >> {asked}\npkg=\"$3\"\n[ \"$pkg\" = ninja-build ] && pkg=ninja\nprintf '#!/bin/sh\\necho \"%s 2.13.0\"\\n' \"$pkg\" > {bin}/$pkg\n/bin/chmod +x {bin}/$pkg",
                asked = asked.display(),
                bin = bin_dir.display()
            ),
        );
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("CMakeLists.txt"), "project(x)\n").unwrap();
        Machine { dir }
    }

    fn project(&self) -> std::path::PathBuf {
        self.dir.path().join("project")
    }

    fn asked(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("asked")).unwrap_or_default()
    }

    fn air(&self, args: &[&str], stdin: &str) -> Output {
        output_with_input(
            Command::new(bin("air"))
                .args(args)
                .current_dir(self.project())
                .env("PATH", self.dir.path().join("bin"))
                .env("AIR_HOME", self.dir.path().join("air-home"))
                .env("AIR_PLATFORM", "debian")
                .env("ANTHROPIC_API_KEY", "sk-test")
                .env("AIR_WORKER", bin("air-worker")),
            stdin,
        )
    }
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn doctor_lists_what_is_missing_and_fix_runs_only_what_the_user_allows() {
    let m = Machine::new();
    // As root the command needs no sudo.
    let sudo = if nix::unistd::geteuid().is_root() {
        ""
    } else {
        "sudo "
    };

    // The first use says what is missing, once, and installs nothing.
    let out = m.air(&["init", "--no-model"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains(
            "first use of this project here; missing: ninja (optional), ccache (optional), cppcheck (required)"
        ),
        "{said}"
    );
    assert!(m
        .project()
        .join(".air/local/state/dependencies.json")
        .is_file());
    let out = m.air(&["init", "--no-model"], "");
    assert!(
        !text(&out.stderr).contains("first use"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(m.asked(), "");

    // The doctor names each with its command for this platform.
    let out = m.air(&["doctor"], "");
    let report = text(&out.stdout);
    assert!(
        report.contains("dependencies (debian; this project: cpp from CMakeLists.txt):"),
        "{report}"
    );
    assert!(report.contains("ok       cmake 9.1.0"), "{report}");
    assert!(
        report.contains(&format!(
            "missing  cppcheck                 required for cpp.analyze (cpp): `{sudo}apt-get install -y cppcheck`"
        )),
        "{report}"
    );
    assert!(report.contains(&format!("`{sudo}apt-get install -y ninja-build`")));
    let out = m.air(&["doctor", "--json"], "");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let deps = v["dependencies"]["dependencies"].as_array().unwrap();
    let ninja = deps.iter().find(|d| d["spec"]["id"] == "ninja").unwrap();
    assert_eq!(ninja["present"], false);
    assert_eq!(m.asked(), "", "the doctor alone installs nothing");

    // --fix asks for each: no to ninja and ccache, yes to cppcheck; only that one is
    // run, and the report after it finds cppcheck. Ninja and ccache are optional: the
    // fix succeeds.
    let out = m.air(&["doctor", "--fix"], "n\nn\ny\n");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "ninja (optional for cpp.build (cpp)) is missing; to install it air would run:\n    {sudo}apt-get install -y ninja-build\n  run it? [y/N]   skipped"
        )),
        "{said}"
    );
    assert_eq!(m.asked(), "install -y cppcheck\n");
    assert!(said.contains("ok       cppcheck 2.13.0"), "{said}");

    // `air setup --yes` shows the command and runs it without asking.
    let out = m.air(&["setup", "--yes"], "");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(!said.contains("run it?"), "{said}");
    assert_eq!(
        m.asked(),
        "install -y cppcheck\ninstall -y ninja-build\ninstall -y ccache\n"
    );
    let out = m.air(&["setup"], "");
    assert!(text(&out.stdout).contains("nothing to install"));
}
