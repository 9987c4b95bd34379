//! What the agents the user talks with are given: the conversation so far and the
//! session's tasks (for the Main Agent, the direct lane and the designer planning),
//! and the task sections of a Main Agent's turn and of the direct lane.

use std::fmt::Write as _;

use air_proto::task::TaskSpec;

use super::nest_headings;

/// What the Main Agent is given of the session: the conversation before this turn
/// and the session's tasks with their latest results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    /// Oldest first.
    pub said: Vec<Said>,
    /// The tasks of the task graph (not the turns), in creation order.
    pub tasks: Vec<TaskLine>,
}

/// One message of the conversation as text.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    /// The message's id (`included_refs.messages`).
    pub id: String,
    pub user: bool,
    pub text: String,
}

/// One task of the session, for the Main Agent.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskLine {
    pub id: String,
    pub title: String,
    pub status: String,
    pub reason: Option<String>,
    /// What its latest agents reported and airsd judged.
    pub outcome: crate::event_store::query::Outcome,
}

/// The most of the conversation a turn is given, in characters; older messages are
/// left out first (and said to be).
pub const CONVERSATION_CHARS: usize = 24_000;
/// The most of one earlier message given, in characters.
pub const SAID_CHARS: usize = 4_000;

fn clipped(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [cut]", &text[..at]),
        None => text.to_string(),
    }
}

/// The conversation's section, the ids of the messages it holds, and how many older
/// ones it left out.
pub(super) fn conversation_text(c: &Conversation) -> Option<(String, Vec<String>, usize)> {
    if c.said.is_empty() {
        return None;
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for said in c.said.iter().rev() {
        let text = clipped(&said.text, SAID_CHARS);
        used += text.len();
        if used > CONVERSATION_CHARS && !kept.is_empty() {
            break;
        }
        kept.push((said, text));
    }
    let mut s = String::from("## The conversation so far\n\n");
    let left_out = c.said.len() - kept.len();
    if left_out > 0 {
        let _ = writeln!(s, "({left_out} earlier message(s) left out.)\n");
    }
    for (said, text) in kept.iter().rev() {
        let who = if said.user { "User" } else { "You" };
        let _ = writeln!(s, "**{who}:** {}\n", nest_headings(text, 3).trim_end());
    }
    let ids = kept.iter().rev().map(|(said, _)| said.id.clone()).collect();
    Some((s, ids, left_out))
}

/// The most of a task's changed files named.
const FILES_NAMED: usize = 20;

pub(super) fn session_tasks_text(heading: &str, tasks: &[TaskLine]) -> Option<String> {
    if tasks.is_empty() {
        return None;
    }
    let mut s = format!("## {heading}\n\n");
    let line = |s: &mut String, label: &str, text: &str, max: usize| {
        let _ = writeln!(s, "  {label}: {}", clipped(text, max).replace('\n', " "));
    };
    for t in tasks {
        let _ = write!(s, "- {} ({}): {}", t.id, t.status, t.title);
        if let Some(r) = t.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            let _ = write!(s, " — {}", clipped(r, 300));
        }
        s.push('\n');
        let o = &t.outcome;
        if let Some(sum) = o.summary.as_deref().filter(|r| !r.trim().is_empty()) {
            line(&mut s, "Result", sum, 1_200);
        }
        if !o.changed.is_empty() {
            let mut named: Vec<String> = o
                .changed
                .iter()
                .take(FILES_NAMED)
                .map(|f| format!("`{f}`"))
                .collect();
            if o.changed.len() > FILES_NAMED {
                named.push(format!("and {} more", o.changed.len() - FILES_NAMED));
            }
            line(&mut s, "Changed", &named.join(", "), 2_000);
        }
        if !o.evidence.is_empty() {
            line(
                &mut s,
                "Evidence airsd recorded",
                &o.evidence.join("; "),
                1_200,
            );
        }
        if !o.refused.is_empty() {
            line(
                &mut s,
                "Refused by the evidence gate",
                &o.refused.join("; "),
                800,
            );
        }
        if let Some(r) = &o.review {
            line(&mut s, "Review", r, 600);
        }
    }
    Some(s)
}

/// The task section of the direct lane: what the user asked, to do now.
pub(super) fn direct_text(t: &TaskSpec) -> String {
    let text = air_proto::conversation::named_intent(&t.description)
        .map_or(t.description.as_str(), |(_, rest)| rest);
    format!(
        "# The user's request\n\n{}\n\nDo it now with the tools, check it, then answer in plain text.\n",
        nest_headings(text.trim(), 1).trim_end()
    )
}

/// The task section of a turn of the Main Agent: the message to answer, or the work
/// to summarise.
pub(super) fn turn_text(t: &TaskSpec) -> String {
    let about = air_proto::conversation::summarised(t);
    if t.title
        .starts_with(air_proto::conversation::ESCALATION_TITLE)
    {
        return format!(
            "# Tell the user\n\nSomething went wrong with work under way that the user must hear about now: {}\n\nTell the user in a few sentences what happened, what airsd did about it, and what they can do (wait for the debugger, `air retry` the task, change the requirement, or stop it). Do not call classify.\n",
            t.description.trim()
        );
    }
    if !about.is_empty() {
        return format!(
            "# Summarise for the user\n\nThe work you handed on has ended: {}. Tell the user what was done, the evidence airsd recorded, what failed and why, and what is next. Read the changed files or the task's output if you need to; do not call classify.\n",
            about.join(", ")
        );
    }
    let (named, text) = match air_proto::conversation::named_intent(&t.description) {
        Some((intent, rest)) => (Some(intent), rest),
        None => (None, t.description.as_str()),
    };
    let mut s = format!(
        "# The user's message\n\n{}\n",
        nest_headings(text.trim(), 1).trim_end()
    );
    match named {
        Some(intent) => {
            use air_proto::conversation::Intent;
            let then = match intent {
                Intent::Chat => "answer it",
                Intent::SimpleTask | Intent::Direct => "write it as one task with delegate_task, then tell the user in a sentence or two what will be done",
                Intent::NeedsPlanning => "the requirement is missing: ask the user what to plan (`/plan` followed by the requirement goes to the Architecture Designer)",
            };
            let _ = writeln!(
                s,
                "\nThe user named this `{}` with its prefix (there is no classify tool this turn): {then}.",
                intent.as_str()
            );
        }
        None => s.push_str("\nClassify it first (the classify tool), then act on it.\n"),
    }
    s
}
