//! The end of a run as a person reads it (the end of `air run` and `air wait`): per
//! task what changed, what airsd saw pass, what the reviewer said, the time and the
//! cost; then where the work went and what to do next.

use std::fmt::Write as _;

use super::{RunReport, TaskReport};
use crate::projection::TaskStatus;

/// Tokens in short: `950`, `1.2k`, `90k`, `1.5M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", n as f64 / 1e3),
        10_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// A duration in short: `0.6s`, `42s`, `3m05s`, `2h10m`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=9 => format!("{:.1}s", ms as f64 / 1000.0),
        10..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The first sentence (or line) of a text, at most `most` characters.
fn first_sentence(text: &str, most: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let end = line.find(". ").map_or(line.len(), |i| i + 1);
    let s = &line[..end];
    if s.chars().count() > most {
        let cut: String = s.chars().take(most.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    } else {
        s.to_string()
    }
}

fn mark(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Completed => "✓",
        TaskStatus::Failed => "✗",
        TaskStatus::Blocked => "!",
        TaskStatus::Cancelled => "-",
        _ => "…",
    }
}

/// Files in one line: the first few, then how many more.
fn files(list: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut s = list
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > SHOWN {
        let _ = write!(s, " and {} more", list.len() - SHOWN);
    }
    s
}

fn cost(usd: f64) -> Option<String> {
    (usd > 0.0).then(|| format!("${usd:.2}"))
}

impl RunReport {
    /// The plan's own tasks (milestone reviews are the scheduler's).
    fn work(&self) -> impl Iterator<Item = &TaskReport> {
        self.tasks
            .iter()
            .filter(|t| crate::task::milestone_phase(&t.id).is_none())
    }

    /// The end of a run for people, as `air run` and `air wait` print it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let work: Vec<&TaskReport> = self.work().collect();
        let width = work.iter().map(|t| t.id.len()).max().unwrap_or(2);
        let title = self.title.as_deref().unwrap_or(&self.plan);
        let outcome = self.outcome.map_or("running", |o| o.as_str());
        let mut head = vec![format!("{title}: {outcome}")];
        if let Some(ms) = self.duration_ms {
            head[0].push_str(&format!(" in {}", duration(ms)));
        }
        head.push(format!(
            "{} task{}",
            work.len(),
            if work.len() == 1 { "" } else { "s" }
        ));
        let used = self.input_tokens + self.output_tokens;
        if used > 0 {
            head.push(format!("{} tokens", tokens(used)));
        }
        if let Some(c) = cost(self.cost_usd) {
            head.push(c);
        }
        let _ = writeln!(out, "{}", head.join(" · "));
        if let Some(reason) = &self.reason {
            let _ = writeln!(out, "  {}", first_sentence(reason, 200));
        }
        let _ = writeln!(out);
        let pad = " ".repeat(width + 4);
        for t in &work {
            let mut line = format!("{} {:width$}  {}", mark(t.status), t.id, t.title);
            let mut facts = Vec::new();
            if t.status != TaskStatus::Completed {
                facts.push(t.status.as_str().to_string());
            }
            if t.attempts > 1 {
                facts.push(format!("{} attempts", t.attempts));
            }
            if let Some(ms) = t.duration_ms {
                facts.push(duration(ms));
            }
            if let Some(c) = cost(t.cost_usd) {
                facts.push(c);
            }
            if !facts.is_empty() {
                let _ = write!(line, " · {}", facts.join(" · "));
            }
            if let Some(b) = &t.branch {
                let _ = write!(line, " [{b}]");
            }
            let _ = writeln!(out, "{line}");
            if !t.files.is_empty() {
                let _ = writeln!(out, "{pad}changed  {}", files(&t.files));
            }
            if !t.checks.is_empty() {
                let _ = writeln!(out, "{pad}checked  {}", t.checks.join(" · "));
            }
            if t.status == TaskStatus::Completed {
                if let Some(r) = &t.review {
                    let _ = writeln!(out, "{pad}review   {}", first_sentence(r, 100));
                }
            } else if let Some(why) = &t.reason {
                let _ = writeln!(out, "{pad}why      {}", first_sentence(why, 160));
            }
        }
        let milestones: Vec<String> = self
            .tasks
            .iter()
            .filter_map(|t| {
                crate::task::milestone_phase(&t.id)
                    .map(|phase| format!("{phase} {}", mark(t.status)))
            })
            .collect();
        if !milestones.is_empty() {
            let _ = writeln!(out, "\nmilestone reviews: {}", milestones.join(" · "));
        }
        if let Some(line) = self.landing_line() {
            let _ = writeln!(out, "{line}");
        }
        let steps = self.next_steps();
        let w = steps.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        for (n, (command, what)) in steps.iter().enumerate() {
            let lead = if n == 0 { "next:" } else { "" };
            let _ = writeln!(out, "{lead:5} {command:w$}  {what}");
        }
        let _ = writeln!(
            out,
            "report: .air/local/sessions/{}/artifacts/reports/run-report.json",
            self.session_id
        );
        out
    }

    /// What a person may do next: each command and what it does.
    fn next_steps(&self) -> Vec<(String, &'static str)> {
        let short: String = self.session_id.chars().take(8).collect();
        let example = self
            .work()
            .find(|t| !t.files.is_empty())
            .or_else(|| self.work().next())
            .map_or("T1", |t| t.id.as_str());
        let unfinished = self.counts.total > self.counts.completed;
        let landed = self.landing.as_ref().is_some_and(|l| l.landed);
        let mut steps = Vec::new();
        if self.outcome.is_none() {
            steps.push((format!("air attach -s {short}"), "watches it"));
        } else if unfinished {
            steps.push((format!("air attach -s {short}"), "shows what happened"));
            steps.push((
                format!("air retry -s {short}"),
                "runs the unfinished tasks again",
            ));
        }
        if self.landing.is_some() {
            steps.push((format!("air diff {example}"), "shows a task's change"));
            if landed {
                steps.push((format!("air undo {example}"), "takes one back out"));
            } else {
                steps.push((
                    format!("air land -s {short}"),
                    "brings the merged work into your checkout",
                ));
            }
        }
        if steps.is_empty() {
            steps.push((format!("air attach -s {short}"), "shows the session"));
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{Landing, RunOutcome};
    use crate::report::{ReportCounts, REPORT_VERSION};

    fn task(id: &str, title: &str, status: TaskStatus) -> TaskReport {
        TaskReport {
            id: id.into(),
            title: title.into(),
            task_type: "execute".into(),
            phase: None,
            status,
            attempts: 1,
            reason: None,
            agents: Vec::new(),
            started_at: None,
            updated_at: String::new(),
            duration_ms: Some(1_250),
            summary: None,
            evidence: Vec::new(),
            branch: None,
            files: Vec::new(),
            checks: Vec::new(),
            review: None,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
        }
    }

    fn report(outcome: RunOutcome, tasks: Vec<TaskReport>, landed: bool) -> RunReport {
        let completed = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count() as u32;
        RunReport {
            version: REPORT_VERSION,
            session_id: "01a24479-2abc-7714-ba17-a5836bc3c88a".into(),
            plan: "plan.md".into(),
            title: Some("Parser".into()),
            outcome: Some(outcome),
            reason: None,
            started_at: String::new(),
            ended_at: None,
            duration_ms: Some(83_000),
            counts: ReportCounts {
                total: tasks.len() as u32,
                completed,
                ..Default::default()
            },
            input_tokens: 41_000,
            output_tokens: 3_200,
            cost_usd: 0.37,
            permission_denials: 0,
            tasks,
            landing: Some(Landing {
                integration_branch: "air/6bc3c88a/integration".into(),
                landed,
                branch: landed.then(|| "main".into()),
                files: vec!["src/parse.c".into()],
                reason: (!landed).then(|| "a task failed".into()),
            }),
        }
    }

    #[test]
    fn the_end_of_a_run_says_what_changed_what_passed_and_what_next() {
        let mut t1 = task("T1", "Tokenizer", TaskStatus::Completed);
        t1.files = vec!["src/lex.c".into(), "src/lex.h".into()];
        t1.checks = vec![
            "build ✓".into(),
            "12 tests ✓".into(),
            "static analysis ✓".into(),
        ];
        t1.review = Some("Approved: the tokenizer handles every case listed. Nits aside.".into());
        t1.cost_usd = 0.12;
        t1.branch = Some("air/6bc3c88a/T1: merged".into());
        let mut t2 = task("T2", "Parser", TaskStatus::Failed);
        t2.attempts = 3;
        t2.reason = Some("its check failed 3 times: `make test` exits 2\nmore".into());
        let review = task(
            "core:milestone-1",
            "Milestone review of phase core",
            TaskStatus::Completed,
        );
        let failed = report(
            RunOutcome::Failed,
            vec![t1.clone(), t2, review.clone()],
            false,
        );
        let done = report(RunOutcome::Completed, vec![t1, review], true);
        insta::assert_snapshot!(
            "end_of_run",
            format!("{}\n----\n{}", done.text(), failed.text())
        );
    }

    #[test]
    fn short_figures() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(1_250), "1.2k");
        assert_eq!(tokens(96_000), "96k");
        assert_eq!(tokens(1_500_000), "1.5M");
        assert_eq!(duration(640), "0.6s");
        assert_eq!(duration(185_000), "3m05s");
    }
}
