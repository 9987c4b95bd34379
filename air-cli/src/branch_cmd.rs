//! `air land`, `air undo` and `air diff`: a session's work on its branches, brought
//! into the checkout, taken back out by task, or shown.

use air_proto::api::{params, AirApiClient};

use crate::session_of;
use crate::{connect, rpc_failure, CmdResult};

/// `air land [SESSION] [--always]`: the session's integration branch into the
/// checkout's branch, only over files the person did not change.
pub async fn land(session: Option<String>, always: bool) -> CmdResult {
    let conn = connect().await?;
    let session = session_of(&conn, session).await?;
    let landing = conn
        .client
        .run_land(params::RunLand {
            session_id: session.clone(),
            always: Some(always),
        })
        .await
        .map_err(rpc_failure)?;
    match (&landing.branch, landing.landed) {
        (Some(branch), true) => {
            outln!(
                "landed {} on {branch}: {} file(s) changed",
                landing.integration_branch,
                landing.files.len()
            );
            for f in &landing.files {
                outln!("  {f}");
            }
            Ok(())
        }
        _ if landing.reason.as_deref() == Some(air_proto::payload::NOTHING_TO_LAND) => {
            outln!(
                "nothing to land: the checkout holds all of {}",
                landing.integration_branch
            );
            Ok(())
        }
        _ => Err(crate::Failure::from(format!(
            "not landed: {}",
            landing.reason.as_deref().unwrap_or("no reason given")
        ))),
    }
}

/// `air undo TASK [-s SESSION]`: the task's merged change taken back out of the
/// session's integration branch, and out of the checkout where it had landed.
pub async fn undo(task: String, session: Option<String>) -> CmdResult {
    let conn = connect().await?;
    let session = session_of(&conn, session).await?;
    let undo = conn
        .client
        .run_undo(params::RunUndo {
            session_id: session,
            task_id: task.clone(),
        })
        .await
        .map_err(rpc_failure)?;
    if !undo.undone {
        return Err(crate::Failure::from(format!(
            "nothing undone: {}",
            undo.reason.as_deref().unwrap_or("no reason given")
        )));
    }
    outln!(
        "undid {task} on {}: {} file(s) changed",
        undo.integration_branch,
        undo.files.len()
    );
    for f in &undo.files {
        outln!("  {f}");
    }
    match &undo.landing {
        Some(l) if l.landed => {
            outln!(
                "and in the checkout ({})",
                l.branch.as_deref().unwrap_or("its branch")
            );
            Ok(())
        }
        Some(l) => Err(crate::Failure::from(format!(
            "the checkout still has it: {}",
            l.reason.as_deref().unwrap_or("no reason given")
        ))),
        None => Ok(()),
    }
}

/// `air gc [--all] [--dry-run]`: the kept worktrees pruned, each named with why.
pub async fn gc(all: bool, dry_run: bool) -> CmdResult {
    let conn = connect().await?;
    let pruned = conn
        .client
        .workspace_prune(params::WorkspacePrune {
            all: Some(all),
            dry_run: Some(dry_run),
        })
        .await
        .map_err(rpc_failure)?;
    let verb = if pruned.dry {
        "would remove"
    } else {
        "removed"
    };
    let mb = |b: u64| b.div_ceil(1 << 20);
    for r in &pruned.removed {
        outln!(
            "{verb} {} ({}, {} MiB): {}",
            r.path,
            r.branch,
            mb(r.bytes),
            r.why
        );
    }
    for k in &pruned.kept {
        outln!(
            "kept {} ({}, {} MiB): {}",
            k.path,
            k.branch,
            mb(k.bytes),
            k.why
        );
    }
    if pruned.removed.is_empty() && pruned.kept.is_empty() {
        outln!("no kept worktrees");
    }
    Ok(())
}

/// `air diff TASK [-s SESSION]`: the task's change, as its latest attempt left it on
/// its branch (the `diffs/` artifact airsd kept).
pub async fn diff(task: String, session: Option<String>) -> CmdResult {
    let conn = connect().await?;
    let session = session_of(&conn, session).await?;
    let artifacts = conn
        .client
        .artifact_list(params::ArtifactList {
            session_id: session.clone(),
            task_id: Some(task.clone()),
            command_run_id: None,
        })
        .await
        .map_err(rpc_failure)?;
    // Newest first: the latest attempt's, which holds every attempt's change.
    let Some(diff) = artifacts.iter().find(|a| a.artifact_type == "diff") else {
        return Err(crate::Failure::from(format!(
            "task {task} of session {session} has no diff: it worked in no worktree, or no attempt of it has ended"
        )));
    };
    let mut offset = 0;
    loop {
        let chunk = conn
            .client
            .artifact_read(params::ArtifactRead {
                session_id: session.clone(),
                artifact_id: diff.id.clone(),
                offset: Some(offset),
                limit: None,
            })
            .await
            .map_err(rpc_failure)?;
        if chunk.encoding != "utf8" {
            return Err(crate::Failure::from(format!(
                "the diff of task {task} is not text"
            )));
        }
        crate::stdout::write_bytes(chunk.data.as_bytes());
        offset += chunk.bytes;
        if chunk.eof || chunk.bytes == 0 {
            break;
        }
    }
    Ok(())
}
