//! A file tool's call on a file the person's editor serves (`editor.serve`): which
//! file, whether the editor may be asked for its text, and the write put into it.

use std::path::{Path, PathBuf};

use super::ToolJob;

/// The file a file tool works on, as the person's editor serves it.
pub(crate) struct Served {
    pub path: PathBuf,
    /// The tools read the editor's text of it.
    pub read: bool,
    /// The call writes it, and the editor is given the result.
    pub write: bool,
}

impl ToolJob {
    /// The file a file tool works on, when the person's editor serves the session's
    /// files in the checkout this call works in. The editor is asked for a file's text
    /// only when the file could be read with no question: a regular file the tools
    /// take, that the PermissionEngine and the task's scope allow, outside air's own
    /// directory (where the tasks' worktrees are). A path that is not UTF-8 is never
    /// the editor's.
    pub(super) async fn editor_file(&self) -> Option<Served> {
        if !matches!(
            self.call.tool.as_str(),
            "fs.read" | "fs.write" | "fs.edit" | "fs.multi_edit"
        ) {
            return None;
        }
        let root = self.env.engine.root().to_path_buf();
        let path = crate::tools::fs::resolve_in(&root, self.call.input["path"].as_str()?).ok()?;
        let shown = path.strip_prefix(&root).ok()?.to_str()?.to_string();
        if path.starts_with(root.join(".air")) {
            return None;
        }
        let editors = self.env.session.editors();
        let writes =
            !crate::tools::reads_only(&self.call.tool) && editors.serves(&root, &path, true);
        if !editors.serves(&root, &path, false) && !writes {
            return None;
        }
        let (engine, scope, at) = (self.env.engine.clone(), self.scope.clone(), path.clone());
        let readable = tokio::task::spawn_blocking(move || {
            let meta = std::fs::symlink_metadata(&at).ok()?;
            let allowed = matches!(
                engine.check(&at, crate::tools::permission::Access::Read),
                crate::tools::permission::Verdict::Allow
            );
            let in_scope =
                crate::tools::scope::Scope::new(&scope).is_ok_and(|s| s.check_read(&shown).is_ok());
            (meta.is_file()
                && meta.len() <= crate::tools::fs::MAX_EDIT_BYTES
                && allowed
                && in_scope)
                .then_some(())
        })
        .await
        .ok()
        .flatten()
        .is_some();
        let read = readable && editors.serves(&root, &path, false);
        (read || writes).then_some(Served {
            path,
            read,
            write: writes,
        })
    }

    /// The file's text as the editor has it, unsaved changes included.
    pub(super) async fn editor_text(&self, path: &Path) -> Option<crate::tools::fs::Overlay> {
        let text = self
            .env
            .session
            .editors()
            .read(self.env.engine.root(), path)
            .await?;
        Some(crate::tools::fs::Overlay {
            path: path.to_path_buf(),
            bytes: text.into_bytes(),
        })
    }

    /// A write just made, put into the editor too (which saves it), so that it lands
    /// in the buffer the person has open.
    pub(super) async fn put_in_editor(&self, path: &Path) {
        let (root, owned) = (self.env.engine.root().to_path_buf(), path.to_path_buf());
        // Only a file with one name: a hard link's other name may be anything.
        let written = tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::MetadataExt as _;
            let single =
                std::fs::symlink_metadata(&owned).is_ok_and(|m| m.is_file() && m.nlink() == 1);
            if !single {
                return Err(crate::tools::ToolError("not a file with one name".into()));
            }
            crate::tools::fs::read_nofollow(&owned, &root, &owned.display().to_string())
        })
        .await;
        let Ok(Ok(bytes)) = written else {
            return;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return;
        };
        if let Err(why) = self
            .env
            .session
            .editors()
            .wrote(self.env.engine.root(), path, &text)
            .await
        {
            tracing::warn!(path = %path.display(), %why, "the editor did not take a write");
        }
    }
}
