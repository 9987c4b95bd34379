//! The tools the worker answers itself, without airsd's tool runner: loading a
//! skill's instructions (`skill_load`, recorded as `skill.loaded`), asking for more
//! time past the soft timeout (`request_more_time`, asked of airsd), reading back
//! what a compaction summarised (`context_recall`), and reporting a skill or rules
//! file found wrong (`report_outdated`, recorded as `memory.outdated.reported`: the
//! ExperienceMiner proposes the correction to the user).

use crate::provider::ToolSpec;
use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::payload as p;
use air_proto::skills::SkillRef;
use serde_json::Value;

use crate::history::History;

/// What the worker's own tools need of the loop's surroundings (every
/// [`crate::agent::Link`] gives it).
pub trait Reach: Sync {
    /// Sends an event to airsd.
    fn record(&self, event: RuntimeEvent);
    /// Asks airsd for more time: the time granted (0: refused) and its word.
    fn more_time(
        &self,
        extra_ms: u64,
        reason: String,
    ) -> impl std::future::Future<Output = (u64, String)> + Send;
}

/// The tool that loads a skill's instructions.
pub const SKILL_LOAD: &str = "skill_load";
/// The tool the model is offered once its soft timeout passed.
pub const MORE_TIME: &str = "request_more_time";
/// The tool that reports a skill or rules file found wrong.
pub const REPORT_OUTDATED: &str = "report_outdated";

/// [`SKILL_LOAD`] as the model sees it.
pub fn skill_tool() -> ToolSpec {
    ToolSpec {
        name: SKILL_LOAD.into(),
        description: "Load the instructions of one of the skills listed in your context, by its name, when it applies to what you do; they say what to do and which of its files to read or run.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        }),
    }
}

/// [`REPORT_OUTDATED`] as the model sees it.
pub fn report_tool() -> ToolSpec {
    ToolSpec {
        name: REPORT_OUTDATED.into(),
        description: "Report that a skill's instructions or a project rules file are wrong or out of date, with what you found true instead; a correction is proposed to the user. Go on with your task as what you found requires.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "`skill:<name>`, or `rules:<path>` for a rules file (its path in the project)."},
                "problem": {"type": "string", "description": "What is wrong, and what is true instead (with the evidence: a command's output, a file)."}
            },
            "required": ["target", "problem"],
            "additionalProperties": false
        }),
    }
}

/// [`MORE_TIME`] as the model sees it.
pub fn more_time_tool() -> ToolSpec {
    ToolSpec {
        name: MORE_TIME.into(),
        description: "Ask for more time before the hard time limit ends this agent. Say why the work needs it; airsd grants or refuses by its rules. Call it only when the work cannot be finished in the time left.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "minutes": {"type": "integer", "minimum": 1, "maximum": 240, "description": "How many more minutes."},
                "reason": {"type": "string", "description": "Why the work needs them."}
            },
            "required": ["minutes", "reason"],
            "additionalProperties": false
        }),
    }
}

/// A span as people say it: seconds under two minutes, else minutes.
fn span(ms: u64) -> String {
    if ms < 120_000 {
        format!("{} s", ms.div_ceil(1_000))
    } else {
        format!("{} min", ms.div_ceil(60_000))
    }
}

/// What the model is told when its soft timeout passed.
pub fn time_told(elapsed_ms: u64, hard_ms: u64) -> String {
    format!(
        "Your soft time limit has passed ({} so far). airsd ends this agent at its hard limit, in about {}. Finish and submit now; if the work truly needs longer, call {MORE_TIME} with how many minutes and why.",
        span(elapsed_ms),
        span(hard_ms.saturating_sub(elapsed_ms))
    )
}

/// What an agent's own tools need of its loop.
pub struct Own<'a, L: Reach> {
    pub link: &'a L,
    pub skills: &'a [SkillRef],
    pub history: &'a History,
    pub session: &'a str,
    pub source: &'a EventSource,
    pub agent_id: &'a str,
    pub task_id: &'a str,
}

impl<L: Reach> Own<'_, L> {
    /// The answer to a call of one of the worker's own tools (content, is_error);
    /// `None` when `name` is not one.
    pub async fn answer(&self, name: &str, input: &Value) -> Option<(String, bool)> {
        Some(match name {
            SKILL_LOAD => self.load_skill(input),
            REPORT_OUTDATED => self.report(input),
            MORE_TIME => ask_time(self.link, input).await,
            crate::history::RECALL => match self.history.recall(input) {
                Ok(text) => (text, false),
                Err(why) => (why, true),
            },
            _ => return None,
        })
    }

    fn record<E: air_proto::events::Event>(&self, event: &E) {
        if let Ok(e) = RuntimeEvent::of(self.session, self.source.clone(), event) {
            self.link.record(e);
        }
    }

    /// The skills' names, for a message.
    fn names(&self) -> String {
        self.skills
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn load_skill(&self, input: &Value) -> (String, bool) {
        let wanted = input
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match self.skills.iter().find(|s| s.name == wanted) {
            Some(skill) => match air_proto::skills::load(skill) {
                Ok(text) => {
                    self.record(&p::SkillLoaded {
                        agent_id: self.agent_id.to_string(),
                        name: skill.name.clone(),
                        path: skill.path.clone(),
                    });
                    (text, false)
                }
                Err(why) => (format!("the skill cannot be read: {why}"), true),
            },
            None => (
                format!("no skill `{wanted}`; the skills are {}", self.names()),
                true,
            ),
        }
    }

    fn report(&self, input: &Value) -> (String, bool) {
        let text = |k: &str| {
            input
                .get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        let (target, problem) = (text("target"), text("problem"));
        let known = match target.split_once(':') {
            Some(("skill", name)) => self.skills.iter().any(|s| s.name == name.trim()),
            Some(("rules", path)) => !path.trim().is_empty(),
            _ => false,
        };
        if !known {
            return (
                format!(
                    "`target` must be `skill:<name>` of a listed skill ({}) or `rules:<path>`, not `{target}`",
                    self.names()
                ),
                true,
            );
        }
        if problem.is_empty() {
            return (
                "`problem` must say what is wrong and what is true instead".into(),
                true,
            );
        }
        self.record(&p::OutdatedReported {
            agent_id: self.agent_id.to_string(),
            task_id: Some(self.task_id.to_string()),
            target,
            problem,
        });
        (
            "reported: a correction will be proposed to the user. Go on with your task as what you found requires.".into(),
            false,
        )
    }
}

/// The model's call of [`MORE_TIME`], asked of airsd; the tool's answer.
async fn ask_time(link: &impl Reach, input: &Value) -> (String, bool) {
    let minutes = input.get("minutes").and_then(Value::as_u64);
    let reason = input
        .get("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    let Some(minutes) = minutes.filter(|m| (1..=240).contains(m)) else {
        return (
            "`minutes` must be a whole number from 1 to 240".into(),
            true,
        );
    };
    if reason.is_empty() {
        return (
            "`reason` must say why the work needs more time".into(),
            true,
        );
    }
    let (granted, why) = link
        .more_time(minutes.saturating_mul(60_000), reason.to_string())
        .await;
    if granted == 0 {
        (
            format!("refused: {why}. Finish with what you have and submit."),
            true,
        )
    } else {
        (
            format!("granted: {} more before the hard limit.", span(granted)),
            false,
        )
    }
}
