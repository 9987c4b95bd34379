//! The PermissionEngine's table, case by case.
#![allow(clippy::unwrap_used)]
use super::*;

fn engine(mode: PermissionMode, config: &PermissionsConfig) -> Engine {
    Engine::new(
        Path::new("/p/proj"),
        Some(Path::new("/home/u")),
        Some(Path::new("/home/u/.air")),
        mode,
        config,
    )
    .unwrap()
}

fn risk(v: Verdict) -> Option<Risk> {
    match v {
        Verdict::Ask(a) => Some(a.risk),
        _ => None,
    }
}

#[test]
fn the_table() {
    let e = engine(PermissionMode::Default, &PermissionsConfig::default());
    let w = Access::Write;
    let r = Access::Read;
    assert_eq!(e.check(Path::new("/p/proj/src/a.rs"), w), Verdict::Allow);
    assert_eq!(e.check(Path::new("/etc/passwd"), r), Verdict::Allow);
    assert_eq!(
        risk(e.check(Path::new("/etc/passwd"), w)),
        Some(Risk::SystemSensitive)
    );
    assert_eq!(
        risk(e.check(Path::new("/etc/shadow"), r)),
        Some(Risk::Credentials)
    );
    assert_eq!(
        risk(e.check(Path::new("/home/u/.ssh/id_rsa"), r)),
        Some(Risk::Credentials)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.env"), r)),
        Some(Risk::Credentials)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.env.local"), r)),
        Some(Risk::Credentials)
    );
    assert_eq!(
        e.check(Path::new("/p/proj/.env.example"), r),
        Verdict::Allow
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/config"), w)),
        Some(Risk::CodeConfig)
    );
    assert_eq!(e.check(Path::new("/p/proj/.git/config"), r), Verdict::Allow);
    assert!(matches!(
        e.check(Path::new("/p/proj/.air/local/x"), w),
        Verdict::Deny(_)
    ));
    assert!(matches!(
        e.check(Path::new("/home/u/.air/config.yaml"), w),
        Verdict::Deny(_)
    ));
    assert_eq!(
        risk(e.check(Path::new("/home/u/.bashrc"), w)),
        Some(Risk::SystemSensitive)
    );
    assert_eq!(
        risk(e.check(Path::new("/home/u/.config/systemd/user/x.service"), w)),
        Some(Risk::SystemSensitive)
    );
    assert_eq!(e.check(Path::new("/home/u/notes.txt"), w), Verdict::Backup);
    // A file put straight into a directory of PATH shadows a program.
    let dir = tempfile::tempdir().unwrap();
    let bin = std::fs::canonicalize(dir.path()).unwrap();
    let shadowing = engine(PermissionMode::Default, &PermissionsConfig::default())
        .with_path_dirs(Some(bin.as_os_str()));
    assert_eq!(
        risk(shadowing.check(&bin.join("git"), w)),
        Some(Risk::CodeConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.air/shared/permissions.yaml"), w)),
        Some(Risk::AirConfig)
    );
    // What later agents are given (rules, skills) is air's configuration too.
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.air/shared/rules/x.md"), w)),
        Some(Risk::AirConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.air/shared/skills/s/SKILL.md"), w)),
        Some(Risk::AirConfig)
    );
    // What runs code later by itself, and what moves git's configuration.
    for p in [
        "/p/proj/.envrc",
        "/p/proj/web/.envrc",
        "/p/proj/.vscode/tasks.json",
        "/p/proj/.claude/settings.json",
        "/p/proj/.devcontainer/devcontainer.json",
        "/p/proj/.github/workflows/ci.yml",
        "/p/proj/.gitattributes",
        "/p/proj/docs/.gitattributes",
        "/p/proj/.gitmodules",
        "/p/proj/.git/commondir",
        "/p/proj/.git/config.worktree",
        "/p/proj/vendor/x/.git/hooks/post-checkout",
        "/p/proj/vendor/x/.git",
    ] {
        assert_eq!(
            risk(e.check(Path::new(p), w)),
            Some(Risk::CodeConfig),
            "{p}"
        );
    }
    assert_eq!(
        e.check(Path::new("/p/proj/.github/README.md"), w),
        Verdict::Allow
    );
    assert_eq!(
        e.check(Path::new("/p/proj/.vscode/extensions.json"), w),
        Verdict::Allow
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/hooks/pre-commit"), w)),
        Some(Risk::CodeConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/refs/heads/x"), w)),
        Some(Risk::GitMetadata)
    );
    assert_eq!(e.check(Path::new("/dev/null"), w), Verdict::Allow);
    assert_eq!(e.check(Path::new("/var/tmp/x"), w), Verdict::Backup);
    assert_eq!(
        risk(e.check(Path::new("/boot/grub/grub.cfg"), w)),
        Some(Risk::SystemSensitive)
    );

    // High permission: .git is allowed, credentials and system paths still ask.
    let e = engine(
        PermissionMode::BypassPermissions,
        &PermissionsConfig::default(),
    );
    assert_eq!(e.check(Path::new("/p/proj/.git/index"), w), Verdict::Allow);
    // What makes git run code, and air's own rules, ask whatever the mode.
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/config"), w)),
        Some(Risk::CodeConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.air/shared/permissions.yaml"), w)),
        Some(Risk::AirConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/etc/fstab"), w)),
        Some(Risk::SystemSensitive)
    );
    assert_eq!(
        risk(e.check(Path::new("/home/u/.aws/credentials"), r)),
        Some(Risk::Credentials)
    );

    // Plan mode refuses writes; permissions.yaml adds credentials, allows .git.
    let e = engine(PermissionMode::Plan, &PermissionsConfig::default());
    assert!(matches!(
        e.check(Path::new("/p/proj/a"), w),
        Verdict::Deny(_)
    ));
    let config = PermissionsConfig {
        git_writes: Some(GitWrites::Allow),
        credentials: vec!["~/.config/acme/token".into()],
        ..Default::default()
    };
    let e = engine(PermissionMode::Default, &config);
    assert_eq!(
        e.check(Path::new("/p/proj/.git/objects/ab/cd"), w),
        Verdict::Allow
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/hooks/pre-commit"), w)),
        Some(Risk::CodeConfig)
    );
    assert_eq!(
        risk(e.check(Path::new("/home/u/.config/acme/token"), r)),
        Some(Risk::Credentials)
    );
    // The user's own rule lets agents change the project's permissions.yaml.
    let config = PermissionsConfig {
        config_writes: Some(GitWrites::Allow),
        ..Default::default()
    };
    let e = engine(PermissionMode::Default, &config);
    assert_eq!(
        e.check(Path::new("/p/proj/.air/shared/permissions.yaml"), w),
        Verdict::Allow
    );
    assert_eq!(
        risk(e.check(Path::new("/p/proj/.git/config"), w)),
        Some(Risk::CodeConfig)
    );
}

#[test]
fn listening_sockets_are_found_by_their_whole_path() {
    let dir = tempfile::tempdir().unwrap();
    let spaced = dir.path().join("an agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&spaced).unwrap();
    let found = listening_sockets(Path::new("/nonexistent-project"));
    assert!(found.contains(&spaced), "{found:?}");
    // The project's own are not hidden.
    assert!(!listening_sockets(dir.path()).contains(&spaced));
}

/// A change of the run's mode reaches the engines of its worktrees too, and the
/// checks judge by it from then on.
#[test]
fn a_mode_change_reaches_every_engine_of_the_run() {
    let e = engine(PermissionMode::Default, &PermissionsConfig::default());
    let worktree = e.rooted(Path::new("/p/proj/.air/local/worktrees/T1"));
    let file = Path::new("/p/proj/src/a.rs");
    assert!(matches!(e.check(file, Access::Write), Verdict::Allow));
    e.set_mode(PermissionMode::Plan);
    assert_eq!(worktree.mode(), PermissionMode::Plan);
    assert!(matches!(e.check(file, Access::Write), Verdict::Deny(_)));
    worktree.set_mode(PermissionMode::BypassPermissions);
    assert_eq!(e.mode(), PermissionMode::BypassPermissions);
}

/// Permits for unit tests: the default mode, no home, backups under the project's
/// `.air/local/backups/`. Leaked: tests are short-lived processes.
pub(crate) fn test_permits(root: &Path) -> &'static Permits<'static> {
    let engine = Box::leak(Box::new(
        Engine::new(
            root,
            None,
            None,
            PermissionMode::Default,
            &PermissionsConfig::default(),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    ));
    let backups = Box::leak(Box::new(Backups::new(
        root.join(".air").join("local").join("backups"),
    )));
    Box::leak(Box::new(Permits::new(
        engine,
        Some(backups),
        BackupTag::default(),
        HashSet::new(),
    )))
}
