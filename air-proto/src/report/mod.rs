//! The report of a plan run: `reports/run-report.json` in the session's artifacts, and
//! the JUnit XML and Markdown summary `air run` writes for CI systems. All three are
//! built from the session's projection, so every client reports the same thing.

use std::fmt::Write as _;

mod text;
pub use text::{duration, tokens};

use serde::{Deserialize, Serialize};

use crate::payload::RunOutcome;
use crate::plan::graph::{self, Drawing, Outcomes};
use crate::projection::{Projection, TaskStatus};
use crate::time::IsoTime;

/// Version of the report's shape.
pub const REPORT_VERSION: u32 = 1;

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunReport {
    pub version: u32,
    pub session_id: String,
    pub plan: String,
    pub title: Option<String>,
    /// Absent while the run goes on.
    pub outcome: Option<RunOutcome>,
    pub reason: Option<String>,
    pub started_at: IsoTime,
    pub ended_at: Option<IsoTime>,
    pub duration_ms: Option<u64>,
    pub counts: ReportCounts,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// Permission requests denied during the run; a run with denials is not a clean
    /// pass even when every task completed.
    pub permission_denials: u64,
    pub tasks: Vec<TaskReport>,
    /// Where the tasks' merged work went, in a run whose tasks worked in worktrees.
    pub landing: Option<crate::payload::Landing>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportCounts {
    pub total: u32,
    pub completed: u32,
    pub failed: u32,
    pub blocked: u32,
    pub cancelled: u32,
    /// Not ended (pending, ready, running, reviewing, debugging).
    pub unfinished: u32,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskReport {
    pub id: String,
    pub title: String,
    #[serde(rename = "type")]
    pub task_type: String,
    pub phase: Option<String>,
    pub status: TaskStatus,
    pub attempts: u32,
    pub reason: Option<String>,
    /// The agents that worked on it, in start order.
    pub agents: Vec<String>,
    pub started_at: Option<IsoTime>,
    pub updated_at: IsoTime,
    /// From its first agent's start to its last change.
    pub duration_ms: Option<u64>,
    /// The summary of the last executor (or single agent) result.
    pub summary: Option<String>,
    /// The evidence airsd recorded of the task's work, one line each: what it shows and
    /// what shows it (`command-run:<id>`, whose logs are under the session's
    /// `artifacts/command-runs/<id>/`, or an artifact's URI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// Its branch and where its change is (`air/…/T1: merged`), in a run whose tasks
    /// work in worktrees.
    pub branch: Option<String>,
    /// The files its merge brought into the session's work.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The checks airsd saw pass, in short (`build ✓`, `6 tests ✓`), from its evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// What its last reviewer said.
    pub review: Option<String>,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Of the turns whose model's prices are known.
    #[serde(default)]
    pub cost_usd: f64,
}

/// The checks a task's evidence shows passed, in short and in order: `build ✓`,
/// `6 tests ✓`, `static analysis ✓`.
pub fn checks(evidence: &[crate::projection::EvidenceView]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut tests: Option<u64> = None;
    let mut tested = false;
    for e in evidence {
        let said = match e.evidence_type.as_str() {
            "build_pass" => "build ✓",
            "test_pass" | "test_output" => {
                tested = true;
                // airsd's own claim: "… ran N test(s), 0 failed".
                if let Some(n) = e
                    .claim
                    .split("ran ")
                    .nth(1)
                    .and_then(|r| r.split(' ').next())
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    tests = Some(tests.map_or(n, |t| t.max(n)));
                }
                continue;
            }
            "static_analysis" => "static analysis ✓",
            "smoke_test" => "smoke test ✓",
            "deploy_verify" => "deploy verified ✓",
            "reproduction" => "reproduced",
            _ => continue,
        };
        if !out.iter().any(|o| o == said) {
            out.push(said.to_string());
        }
    }
    if tested {
        let line = match tests {
            Some(1) => "1 test ✓".to_string(),
            Some(n) => format!("{n} tests ✓"),
            None => "tests ✓".to_string(),
        };
        // After the build, before analysis: the order people read them in.
        let at = usize::from(out.first().is_some_and(|o| o == "build ✓"));
        out.insert(at, line);
    }
    out
}

fn ms_between(from: &str, to: &str) -> Option<u64> {
    let (a, b) = (crate::time::parse(from)?, crate::time::parse(to)?);
    b.duration_since(a)
        .ok()
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl RunReport {
    /// The report of a session's run; `None` when no run started in it.
    pub fn from_projection(p: &Projection) -> Option<RunReport> {
        let run = p.run.as_ref()?;
        let mut counts = ReportCounts::default();
        // The conversation's turns are not work of the task graph.
        let tasks: Vec<TaskReport> =
            p.tasks
                .iter()
                .filter(|t| !crate::conversation::is_any_turn(&t.id))
                .map(|t| {
                    counts.total += 1;
                    match t.status {
                        TaskStatus::Completed => counts.completed += 1,
                        TaskStatus::Failed => counts.failed += 1,
                        TaskStatus::Blocked => counts.blocked += 1,
                        TaskStatus::Cancelled => counts.cancelled += 1,
                        _ => counts.unfinished += 1,
                    }
                    let agents: Vec<&crate::projection::AgentView> = p
                        .agents
                        .iter()
                        .filter(|a| a.task_id.as_deref() == Some(t.id.as_str()))
                        .collect();
                    let started_at = agents.first().map(|a| a.started_at.clone());
                    // The work's own account: the last result of an agent that did the
                    // task itself (not a reviewer or debugger), else the last result.
                    let worker = agents
                        .iter()
                        .rev()
                        .find(|a| {
                            a.summary.is_some()
                                && !matches!(
                                    a.agent_type,
                                    crate::event::AgentType::Reviewer
                                        | crate::event::AgentType::Debugger
                                )
                        })
                        .or_else(|| agents.iter().rev().find(|a| a.summary.is_some()));
                    let review = agents
                        .iter()
                        .rev()
                        .find(|a| {
                            a.agent_type == crate::event::AgentType::Reviewer && a.summary.is_some()
                        })
                        .and_then(|a| a.summary.clone());
                    TaskReport {
                        files: t
                            .workspace
                            .as_ref()
                            .map(|w| w.files.clone())
                            .unwrap_or_default(),
                        checks: checks(&t.evidence),
                        review,
                        input_tokens: t.usage.input_tokens,
                        output_tokens: t.usage.output_tokens,
                        cost_usd: t.usage.cost_micro_usd as f64 / 1e6,
                        id: t.id.clone(),
                        title: t.title.clone(),
                        task_type: t.task_type.clone(),
                        phase: t.phase.clone(),
                        status: t.status,
                        attempts: t.attempts,
                        reason: t.reason.clone(),
                        agents: agents.iter().map(|a| a.id.clone()).collect(),
                        duration_ms: started_at
                            .as_deref()
                            .and_then(|s| ms_between(s, &t.updated_at)),
                        started_at,
                        updated_at: t.updated_at.clone(),
                        summary: worker.and_then(|a| a.summary.clone()),
                        // airsd's own records of the work; a session recorded before
                        // airsd derived evidence has only the result's claims.
                        evidence: if t.evidence.is_empty() {
                            worker.map(|a| a.evidence.clone()).unwrap_or_default()
                        } else {
                            t.evidence.iter().map(|e| e.line()).collect()
                        },
                        branch: t.workspace.as_ref().map(|w| {
                            format!("{}: {}", w.branch, w.describe(t.status.is_terminal()))
                        }),
                    }
                })
                .collect();
        Some(RunReport {
            version: REPORT_VERSION,
            session_id: p.session_id.clone(),
            plan: run.plan.clone(),
            title: run.title.clone(),
            outcome: run.outcome,
            reason: run.reason.clone().or_else(|| run.stopped.clone()),
            started_at: run.started_at.clone(),
            ended_at: run.ended_at.clone(),
            duration_ms: run
                .ended_at
                .as_deref()
                .and_then(|e| ms_between(&run.started_at, e)),
            counts,
            input_tokens: p.counters.input_tokens,
            output_tokens: p.counters.output_tokens,
            cost_usd: p.counters.cost_micro_usd as f64 / 1e6,
            permission_denials: p.counters.permission_denials,
            tasks,
            landing: run.landing.clone(),
        })
    }

    /// One line on where the run's merged work went: landed on a branch (with how
    /// many files), or kept on the integration branch and why.
    pub fn landing_line(&self) -> Option<String> {
        let l = self.landing.as_ref()?;
        Some(match (&l.branch, l.landed) {
            (Some(branch), true) => format!(
                "landed on {branch}: {} file(s) changed ({} holds each task's merge)",
                l.files.len(),
                l.integration_branch
            ),
            _ => format!(
                "kept on {}: {}",
                l.integration_branch,
                l.reason.as_deref().unwrap_or("not landed")
            ),
        })
    }

    /// JUnit XML: one testsuite for the run, one testcase per task. Failed tasks are
    /// failures, blocked ones errors, cancelled and unfinished ones skipped; the
    /// message is the reason the scheduler recorded.
    pub fn junit_xml(&self) -> String {
        let c = &self.counts;
        let name = self.title.as_deref().unwrap_or(&self.plan);
        let secs = |ms: Option<u64>| ms.map_or(0.0, |m| m as f64 / 1000.0);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"air\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            c.total,
            c.failed,
            c.blocked,
            c.cancelled + c.unfinished,
            secs(self.duration_ms)
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\" timestamp=\"{}\">",
            xml(name),
            c.total,
            c.failed,
            c.blocked,
            c.cancelled + c.unfinished,
            secs(self.duration_ms),
            xml(&self.started_at)
        );
        let _ = writeln!(
            out,
            "    <properties><property name=\"session_id\" value=\"{}\"/><property name=\"plan\" value=\"{}\"/></properties>",
            xml(&self.session_id),
            xml(&self.plan)
        );
        for t in &self.tasks {
            let class = t
                .phase
                .as_deref()
                .map_or_else(|| "air.plan".to_string(), |p| format!("air.plan.{p}"));
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}: {}\" time=\"{:.3}\"",
                xml(&class),
                xml(&t.id),
                xml(&t.title),
                secs(t.duration_ms)
            );
            let reason = t.reason.as_deref().unwrap_or("");
            let mut detail = format!(
                "task {} ({}), {} attempt(s), agents: {}\n{}",
                t.id,
                t.status.as_str(),
                t.attempts,
                if t.agents.is_empty() {
                    "none".to_string()
                } else {
                    t.agents.join(", ")
                },
                reason
            );
            if let Some(summary) = &t.summary {
                let _ = write!(detail, "\nsummary: {summary}");
            }
            for e in &t.evidence {
                let _ = write!(detail, "\nevidence: {e}");
            }
            match t.status {
                TaskStatus::Completed => {
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>{}</system-out>\n    </testcase>",
                        xml(&detail)
                    );
                }
                TaskStatus::Failed => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"failed\">{}</failure>\n    </testcase>",
                        xml(reason),
                        xml(&detail)
                    );
                }
                TaskStatus::Blocked => {
                    let _ = writeln!(
                        out,
                        ">\n      <error message=\"{}\" type=\"blocked\">{}</error>\n    </testcase>",
                        xml(reason),
                        xml(&detail)
                    );
                }
                other => {
                    let why = if reason.is_empty() {
                        format!("not run to the end ({})", other.as_str())
                    } else {
                        reason.to_string()
                    };
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        xml(&why)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }

    /// A Markdown summary: the outcome, a table of tasks, and the task graph as a
    /// Mermaid diagram coloured by outcome.
    pub fn markdown(&self, drawing: &Drawing) -> String {
        let mut out = String::new();
        let title = self.title.as_deref().unwrap_or(&self.plan);
        let outcome = self.outcome.map_or("running", |o| o.as_str());
        let _ = writeln!(out, "## air run: {title}\n");
        let c = &self.counts;
        let _ = writeln!(
            out,
            "**{outcome}** — {} of {} tasks completed, {} failed, {} blocked, {} cancelled, {} unfinished{}{}.\n",
            c.completed,
            c.total,
            c.failed,
            c.blocked,
            c.cancelled,
            c.unfinished,
            self.duration_ms
                .map(|ms| format!(", in {:.1} s", ms as f64 / 1000.0))
                .unwrap_or_default(),
            if self.permission_denials > 0 {
                format!("; {} permission request(s) denied", self.permission_denials)
            } else {
                String::new()
            }
        );
        if let Some(reason) = &self.reason {
            let _ = writeln!(out, "> {}\n", reason.replace('\n', " "));
        }
        if let Some(line) = self.landing_line() {
            let _ = writeln!(out, "{line}\n");
        }
        let outcomes: Outcomes = self
            .tasks
            .iter()
            .map(|t| (t.id.clone(), t.status.as_str().to_string()))
            .collect();
        let _ = writeln!(
            out,
            "```mermaid\n{}```\n",
            graph::mermaid_drawing(drawing, &outcomes)
        );
        out.push_str(
            "| task | status | attempts | changed | checked | reason or review |\n|---|---|---|---|---|---|\n",
        );
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        for t in &self.tasks {
            let said = match (t.status, &t.reason, &t.review) {
                (TaskStatus::Completed, _, Some(review)) => review.as_str(),
                (_, Some(reason), _) => reason.as_str(),
                _ => "",
            };
            let _ = writeln!(
                out,
                "| `{}` {} | {} | {} | {} | {} | {} |",
                t.id,
                cell(&t.title),
                t.status.as_str(),
                t.attempts,
                cell(&t.files.join(", ")),
                t.checks.join(" · "),
                cell(said)
            );
        }
        let _ = writeln!(
            out,
            "\nSession `{}` · {} input / {} output tokens{}",
            self.session_id,
            self.input_tokens,
            self.output_tokens,
            if self.cost_usd > 0.0 {
                format!(" · ${:.2}", self.cost_usd)
            } else {
                String::new()
            }
        );
        out
    }
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 forbids.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}
