//! What air and the project's languages need installed (D-045, baseline §11), and
//! whether this machine has it: the DependencySpecs of air's own capabilities and of
//! each language profile the project calls for, each detected read-only, with the
//! exact command that would install it on this platform.
//!
//! `airsd __dependencies [--root DIR] [--all]` prints the report as JSON for `air
//! doctor` and `air doctor --fix`, which shows the commands and asks before running
//! any. Must not: install anything, or run anything but a found program's
//! `--version`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use air_proto::dependency::*;

/// The hidden subcommand.
pub const ARG: &str = "__dependencies";

/// How long a program may take to print its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// What air itself needs, whatever the project's language. (A provider's key is not
/// here: `air doctor`'s providers and models say what each agent would use.)
pub fn core() -> Vec<DependencySpec> {
    use DependencySeverity::*;
    let mut tmux = executable(
        "tmux",
        &["attach.terminal-tests"],
        Optional,
        Packages::same("tmux"),
    );
    tmux.detect.version_args = Some(vec!["-V".into()]);
    vec![
        executable(
            "git",
            &["checkpoints", "review"],
            Required,
            Packages::same("git"),
        ),
        executable("bash", &["exec"], Required, Packages::same("bash")),
        tmux,
    ]
}

/// The platform install commands are chosen for: `AIR_PLATFORM` if set (for a
/// distribution air does not recognise as what it derives from), else `macos`, or
/// `debian`, `fedora`, `arch` or the `ID` that `/etc/os-release` names.
pub fn platform() -> String {
    if let Some(p) = std::env::var("AIR_PLATFORM").ok().filter(|p| !p.is_empty()) {
        return p;
    }
    if cfg!(target_os = "macos") {
        return "macos".into();
    }
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    platform_of(&text)
}

fn platform_of(os_release: &str) -> String {
    let field = |name: &str| -> Vec<String> {
        os_release
            .lines()
            .filter_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .flat_map(|v| {
                v.trim_matches('"')
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let ids: Vec<String> = field("ID").into_iter().chain(field("ID_LIKE")).collect();
    for known in ["debian", "fedora", "arch"] {
        if ids.iter().any(|i| i == known) {
            return known.into();
        }
    }
    match ids.iter().map(String::as_str).find(|i| !i.is_empty()) {
        Some("ubuntu") => "debian".into(),
        Some("rhel" | "centos") => "fedora".into(),
        Some(other) => other.to_string(),
        None => std::env::consts::OS.to_string(),
    }
}

/// Detects every dependency of air and of the project's profiles (of every profile
/// with `all`).
pub fn check(root: Option<&Path>, all: bool) -> Report {
    let platform = platform();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let is_root = nix::unistd::geteuid().is_root();
    let mut wanted: Vec<(DependencySpec, String)> =
        core().into_iter().map(|s| (s, "air".to_string())).collect();
    let mut profiles = Vec::new();
    for p in crate::profiles::all() {
        let files = root.map(|r| p.detect(r)).unwrap_or_default();
        if files.is_empty() && !all {
            continue;
        }
        if !files.is_empty() {
            profiles.push((p.name().to_string(), files));
        }
        wanted.extend(
            p.dependencies()
                .into_iter()
                .map(|s| (s, p.name().to_string())),
        );
    }
    // What the trusted capabilities need.
    if let Some(root) = root {
        let air_home = crate::air_home();
        let (capabilities, _) = air_proto::capability::trusted(air_home.as_deref(), root);
        for c in capabilities {
            let by = format!("capability {}", c.manifest.name);
            wanted.extend(
                c.manifest
                    .needs
                    .dependencies
                    .into_iter()
                    .map(|d| (d, by.clone())),
            );
        }
    }
    // A Meson project is detected, not built by cpp_build: its agents run meson
    // through shell_run, so it is needed where a meson.build is, unless the project
    // also builds with CMake or Make (which cpp_build drives).
    if let Some(r) = root.filter(|r| r.join("meson.build").is_file()) {
        let other = ["CMakeLists.txt", "Makefile", "makefile", "GNUmakefile"]
            .iter()
            .any(|f| r.join(f).is_file());
        wanted.push((
            executable(
                "meson",
                &["shell.run of this Meson project (cpp.build does not build Meson)"],
                if other {
                    DependencySeverity::Optional
                } else {
                    DependencySeverity::Required
                },
                Packages::same("meson"),
            ),
            "cpp".to_string(),
        ));
    }
    let mut unique: Vec<(DependencySpec, Vec<String>)> = Vec::new();
    for (spec, by) in wanted {
        if let Some((f, needed_by)) = unique.iter_mut().find(|(f, _)| f.id == spec.id) {
            if !needed_by.contains(&by) {
                needed_by.push(by);
            }
            for r in spec.required_for {
                if !f.required_for.contains(&r) {
                    f.required_for.push(r);
                }
            }
        } else {
            unique.push((spec, vec![by]));
        }
    }
    // Each program prints its version at once: a dozen of them one after another
    // would keep `air doctor` waiting.
    let env_set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let dependencies = std::thread::scope(|scope| {
        let handles: Vec<_> = unique
            .into_iter()
            .map(|(spec, by)| {
                let (platform, path) = (&platform, &path);
                scope.spawn(move || detect(spec, by, platform, path, root, is_root, &env_set))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    Report {
        platform,
        profiles,
        dependencies,
    }
}

fn detect(
    spec: DependencySpec,
    needed_by: Vec<String>,
    platform: &str,
    path: &std::ffi::OsStr,
    project: Option<&Path>,
    is_root: bool,
    env_set: &dyn Fn(&str) -> bool,
) -> Found {
    let mut present = true;
    let mut location = None;
    let mut version = None;
    if let Some(exe) = &spec.detect.executable {
        match which(exe, path) {
            Some(p) => {
                // Only a program from a trusted directory is run (never one the
                // project or a temporary directory put on PATH).
                let avoid: Vec<&Path> = project.into_iter().collect();
                let trusted = air_proto::program::find(exe, Some(path), &avoid).is_some_and(|t| {
                    t == p || std::fs::canonicalize(&t).ok() == std::fs::canonicalize(&p).ok()
                });
                if let (Some(args), true) = (&spec.detect.version_args, trusted) {
                    version = version_of(&p, args);
                }
                location = Some(p.display().to_string());
            }
            None => present = false,
        }
    }
    if let Some(vars) = &spec.detect.env_var {
        match vars.split('|').find(|v| env_set(v)) {
            Some(v) => location = Some(v.to_string()),
            None => present = false,
        }
    }
    if let Some(p) = &spec.detect.path {
        present &= Path::new(p).exists();
    }
    let install = spec.install.as_ref().and_then(|i| {
        let c = i
            .commands
            .as_ref()?
            .iter()
            .find(|c| c.platform.as_deref().is_none_or(|p| p == platform))?;
        Some(if c.requires_root == Some(true) && !is_root {
            format!("sudo {}", c.command)
        } else {
            c.command.clone()
        })
    });
    let docs = spec.install.as_ref().and_then(|i| i.docs.clone());
    Found {
        needed_by,
        present,
        location,
        version,
        install,
        docs,
        spec,
    }
}

/// The program `name` on `path`, as a shell would find it.
pub fn which(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    std::env::split_paths(path).map(|d| d.join(name)).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The first dotted number the program prints for `args` (within the timeout).
fn version_of(program: &Path, args: &[String]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dotted_number(&text)
}

/// `1.2` or `3.28.3` as it first appears in `text`.
fn dotted_number(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_string)
}

/// `airsd __dependencies [--root DIR] [--all]`: prints the report as JSON.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let mut root = None;
    let mut all = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--all") => all = true,
            Some("--root") => match it.next() {
                Some(d) => root = Some(PathBuf::from(d)),
                None => {
                    eprintln!("airsd {ARG}: --root needs a directory");
                    return 2;
                }
            },
            _ => {
                eprintln!(
                    "airsd {ARG}: unknown argument `{}` (usage: airsd {ARG} [--root DIR] [--all])",
                    a.to_string_lossy()
                );
                return 2;
            }
        }
    }
    crate::answer_json(Ok::<_, String>(check(root.as_deref(), all)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_is_read_from_os_release() {
        for (text, want) in [
            ("ID=debian\nVERSION_ID=\"12\"", "debian"),
            ("ID=ubuntu\nID_LIKE=debian", "debian"),
            ("ID=pop\nID_LIKE=\"ubuntu debian\"", "debian"),
            ("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"", "fedora"),
            ("ID=manjaro\nID_LIKE=arch", "arch"),
            ("ID=alpine", "alpine"),
        ] {
            assert_eq!(platform_of(text), want, "{text}");
        }
    }

    #[test]
    fn meson_is_needed_where_a_meson_build_is() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.c"), "int main(void) { return 0; }\n").unwrap();
        let ids = |r: &Report| -> Vec<String> {
            r.dependencies.iter().map(|f| f.spec.id.clone()).collect()
        };
        assert!(!ids(&check(Some(dir.path()), false)).contains(&"meson".to_string()));
        std::fs::write(dir.path().join("meson.build"), "project('p', 'c')\n").unwrap();
        let report = check(Some(dir.path()), false);
        let meson = report
            .dependencies
            .iter()
            .find(|f| f.spec.id == "meson")
            .unwrap_or_else(|| panic!("{:?}", ids(&report)));
        assert_eq!(meson.spec.severity, DependencySeverity::Required);
        // A project that CMake builds too does not need it.
        std::fs::write(dir.path().join("CMakeLists.txt"), "project(p C)\n").unwrap();
        let report = check(Some(dir.path()), false);
        let meson = report.dependencies.iter().find(|f| f.spec.id == "meson");
        assert_eq!(
            meson.map(|m| m.spec.severity),
            Some(DependencySeverity::Optional)
        );
    }

    #[test]
    fn versions_are_the_first_dotted_number() {
        assert_eq!(
            dotted_number("cmake version 3.25.1\n\nCMake suite").as_deref(),
            Some("3.25.1")
        );
        assert_eq!(
            dotted_number("git version 2.39.5.").as_deref(),
            Some("2.39.5")
        );
        assert_eq!(dotted_number("no version here 7"), None);
    }

    #[test]
    fn a_missing_program_is_reported_with_the_command_for_this_platform() {
        // Outside the temporary directories: programs there are never run.
        let base = air_proto::program::trusted_scratch(&std::env::current_dir().unwrap())
            .expect("a directory outside the temporary ones");
        let dir = tempfile::tempdir_in(base).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("cmake");
        std::fs::write(&tool, "#!/bin/sh\necho 'cmake version 3.99.1'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spec = |id: &'static str| {
            executable(
                id,
                &["cpp.build"],
                DependencySeverity::Required,
                Packages::same(id),
            )
        };
        let path = bin.as_os_str();
        let unset = |_: &str| false;
        let found = detect(
            spec("cmake"),
            vec!["cpp".into()],
            "debian",
            path,
            None,
            false,
            &unset,
        );
        assert!(found.present);
        assert_eq!(found.version.as_deref(), Some("3.99.1"));
        // The same program in the project, or in a temporary directory, is found but
        // never run.
        let in_project = detect(
            spec("cmake"),
            vec!["cpp".into()],
            "debian",
            path,
            Some(dir.path()),
            false,
            &unset,
        );
        assert!(in_project.present && in_project.version.is_none());
        let tmp = tempfile::tempdir().unwrap();
        std::fs::copy(&tool, tmp.path().join("cmake")).unwrap();
        let in_tmp = detect(
            spec("cmake"),
            vec!["cpp".into()],
            "debian",
            tmp.path().as_os_str(),
            None,
            false,
            &unset,
        );
        assert!(in_tmp.present && in_tmp.version.is_none());
        let missing = detect(
            spec("ninja"),
            vec!["cpp".into()],
            "debian",
            path,
            None,
            false,
            &unset,
        );
        assert!(!missing.present);
        assert_eq!(
            missing.install.as_deref(),
            Some("sudo apt-get install -y ninja")
        );
        let as_root = detect(
            spec("ninja"),
            vec!["cpp".into()],
            "fedora",
            path,
            None,
            true,
            &unset,
        );
        assert_eq!(as_root.install.as_deref(), Some("dnf install -y ninja"));
        let mac = detect(
            spec("ninja"),
            vec!["cpp".into()],
            "macos",
            path,
            None,
            false,
            &unset,
        );
        assert_eq!(mac.install.as_deref(), Some("brew install ninja"));
        let nowhere = detect(
            spec("ninja"),
            vec!["cpp".into()],
            "plan9",
            path,
            None,
            false,
            &unset,
        );
        assert_eq!(nowhere.install, None);
    }
}
