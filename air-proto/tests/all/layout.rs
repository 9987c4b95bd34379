//! The `.air/` layout: `air init` (idempotent), finding the project root like git,
//! refusing a newer or broken project file, canonical timestamps.

use std::fs;

use air_proto::layout::{self, LayoutError, ProjectPaths};

#[test]
fn init_creates_the_layout_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join(".gitignore"), "target/").unwrap();
    let first = layout::init(root, "2026-11-30T00:00:00Z").unwrap();
    assert!(first.created && first.gitignore_updated);
    let paths = ProjectPaths::new(root);
    for d in paths.init_dirs() {
        assert!(d.is_dir(), "{} missing", d.display());
    }
    let project = paths.read_project().unwrap();
    assert_eq!(project, first.project);
    assert_eq!(project.schema_version, 1);
    assert_eq!(project.name, root.file_name().unwrap().to_string_lossy());
    assert_eq!(
        fs::read_to_string(root.join(".gitignore")).unwrap(),
        "target/\n.air/local/\n"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(paths.local()).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    let second = layout::init(root, "2026-12-01T00:00:00Z").unwrap();
    assert!(!second.created && !second.gitignore_updated);
    assert_eq!(
        second.project.project_id, first.project.project_id,
        "project_id is stable"
    );
    assert_eq!(
        fs::read_to_string(root.join(".gitignore")).unwrap(),
        "target/\n.air/local/\n"
    );
}

#[test]
fn find_root_walks_up_like_git() {
    let dir = tempfile::tempdir().unwrap();
    layout::init(dir.path(), "t").unwrap();
    let deep = dir.path().join("src/a/b");
    fs::create_dir_all(&deep).unwrap();
    assert_eq!(layout::find_root(&deep).unwrap().root(), dir.path());
    let outside = tempfile::tempdir().unwrap();
    let err = layout::find_root(outside.path()).unwrap_err();
    assert!(matches!(err, LayoutError::NotInProject { .. }));
    assert!(err.to_string().contains("air init"), "{err}");
}

#[test]
fn a_newer_or_broken_project_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    layout::init(dir.path(), "t").unwrap();
    let paths = ProjectPaths::new(dir.path());
    let text = fs::read_to_string(paths.project_json())
        .unwrap()
        .replace("\"schema_version\": 1", "\"schema_version\": 99");
    fs::write(paths.project_json(), text).unwrap();
    let err = layout::init(dir.path(), "t").unwrap_err().to_string();
    assert!(err.contains("schema_version 99 is newer"), "{err}");
    fs::write(paths.project_json(), "{ not json").unwrap();
    let err = paths.read_project().unwrap_err().to_string();
    assert!(err.contains("project.json: invalid project file"), "{err}");
}

#[test]
fn init_on_a_file_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    fs::write(&file, "").unwrap();
    let err = layout::init(&file, "t").unwrap_err();
    assert!(matches!(err, LayoutError::NotADirectory { .. }), "{err}");
}

#[test]
fn timestamps_with_offsets_are_canonicalised_to_utc_micros() {
    use air_proto::time::canonical;
    assert_eq!(
        canonical("2026-11-30T12:00:00+02:00").unwrap(),
        "2026-11-30T10:00:00.000000Z"
    );
    assert_eq!(
        canonical("2026-11-30T10:00:00.5-01:30").unwrap(),
        "2026-11-30T11:30:00.500000Z"
    );
    assert_eq!(
        canonical("2026-11-30T10:00:00Z").unwrap(),
        "2026-11-30T10:00:00.000000Z"
    );
    assert!(canonical("2026-11-30T10:00:00+25:00").is_none());
    assert!(canonical("yesterday").is_none());
}

/// Writers of `project.json` through `update_project` never lose each other's change:
/// two threads each adding fifty languages leave a hundred.
#[test]
fn concurrent_changes_of_project_json_are_all_kept() {
    use air_proto::project_profile::{ProfileOrigin, ProjectProfile};
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "2026-12-02T00:00:00Z").unwrap();
    let paths = air_proto::layout::ProjectPaths::new(dir.path());
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let paths = paths.clone();
            std::thread::spawn(move || {
                for n in 0..50 {
                    paths
                        .update_project(|p| {
                            p.profile
                                .get_or_insert_with(|| {
                                    ProjectProfile::unknown(ProfileOrigin::Detected)
                                })
                                .languages
                                .get_or_insert_with(Vec::new)
                                .push(format!("{who}{n}"));
                            true
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let project = paths.read_project().unwrap();
    let languages = project.profile.unwrap().languages.unwrap();
    assert_eq!(languages.len(), 100);
}
