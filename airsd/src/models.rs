//! Which model each agent of a run talks to, asked of the worker binary
//! (`air-worker --resolve`) before the run starts.
//!
//! The worker is what reads provider keys and talks to providers, with the
//! environment airsd gives it, so it is the one to say whether a provider is there.
//! A run whose agents could not reach a model is refused before any task starts; the
//! answers give the ContextAssembler each model's window.

use std::process::Stdio;
use std::time::Duration;

use air_proto::event::AgentType;
use air_proto::ipc::{ModelChoice, ModelQuery, ModelReply};
use air_proto::task::TaskSpec;

use crate::supervisor::WorkerCommand;

/// How long the worker may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The models of a run: each query with its answer.
#[derive(Clone, Debug, Default)]
pub struct Models {
    /// The run's `--model`/`--provider` override.
    pub flag: Option<String>,
    pub resolved: Vec<(ModelQuery, ModelChoice)>,
}

impl Models {
    /// The model an agent of `role` on a task with `task_model` uses, when it was
    /// resolved.
    pub fn choice(&self, role: AgentType, task_model: Option<&str>) -> Option<&ModelChoice> {
        self.resolved
            .iter()
            .find(|(q, _)| q.agent_type == role && q.task.as_deref() == task_model)
            .map(|(_, c)| c)
    }
}

/// The agents a plan's run will start, each with its task's model: executors,
/// reviewers and debuggers on every model the tasks name, the Architecture
/// Designer when there are phases to review, and the Main Agent, which answers the
/// user in any run.
pub fn queries(
    tasks: &[TaskSpec],
    phases: bool,
    flag: Option<&str>,
    replay: Option<&str>,
) -> Vec<ModelQuery> {
    let mut task_models: Vec<Option<String>> = Vec::new();
    for t in tasks {
        if !task_models.contains(&t.constraints.model_id) {
            task_models.push(t.constraints.model_id.clone());
        }
    }
    let mut roles = vec![
        AgentType::Executor,
        AgentType::Reviewer,
        AgentType::Debugger,
    ];
    if phases {
        roles.push(AgentType::ArchitectureDesigner);
    }
    let mut out = vec![ModelQuery {
        agent_type: AgentType::Main,
        flag: flag.map(str::to_string),
        task: None,
        replay: replay.map(str::to_string),
    }];
    for m in &task_models {
        for role in &roles {
            out.push(ModelQuery {
                agent_type: *role,
                flag: flag.map(str::to_string),
                task: m.clone(),
                replay: replay.map(str::to_string),
            });
        }
    }
    out
}

/// Resolves the models of a run of these tasks (its phases, `--model` and `--replay`
/// from `run.started`), or says why the run cannot start.
pub async fn for_run(
    worker: &WorkerCommand,
    tasks: &[TaskSpec],
    run: &air_proto::payload::RunStarted,
) -> Result<Models, String> {
    // A conversation may plan (the Architecture Designer), and its plan have phases.
    let mut queries = queries(
        tasks,
        !run.phases.is_empty() || run.plan == air_proto::conversation::CONVERSATION_PLAN,
        run.model.as_deref(),
        run.replay.as_deref(),
    );
    // A run that learns runs the ExperienceMiner: its model is needed too.
    if run.learn {
        queries.push(ModelQuery {
            agent_type: AgentType::ExperienceMiner,
            flag: run.model.clone(),
            task: None,
            replay: run.replay.clone(),
        });
    }
    resolve(worker, queries, run.model.clone()).await
}

/// Asks the worker binary; `Err` names what went wrong with the asking itself.
pub async fn ask(
    worker: &WorkerCommand,
    queries: &[ModelQuery],
) -> Result<Vec<ModelReply>, String> {
    let json = serde_json::to_string(queries).map_err(|e| e.to_string())?;
    let program = worker.program.display().to_string();
    let child = tokio::process::Command::new(&worker.program)
        .args(&worker.args)
        .arg("--resolve")
        .arg(&json)
        .env_clear()
        .envs(worker.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the worker {program}: {e}"))?;
    let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| format!("the worker {program} did not answer --resolve within {TIMEOUT:?}"))?
        .map_err(|e| format!("the worker {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the worker {program} --resolve failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let replies: Vec<ModelReply> = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!("the worker {program} answered --resolve with something unreadable: {e}")
    })?;
    if replies.len() != queries.len() {
        return Err(format!(
            "the worker {program} answered {} of {} --resolve queries",
            replies.len(),
            queries.len()
        ));
    }
    Ok(replies)
}

/// Resolves a run's models, or says why the run cannot start.
pub async fn resolve(
    worker: &WorkerCommand,
    queries: Vec<ModelQuery>,
    flag: Option<String>,
) -> Result<Models, String> {
    let replies = ask(worker, &queries).await?;
    let mut resolved = Vec::new();
    // Each error once, with the agents it stops: one missing key stops them all.
    let mut problems: Vec<(String, Vec<String>)> = Vec::new();
    for (q, r) in queries.into_iter().zip(replies) {
        let who = match &q.task {
            Some(m) => format!("{} (task model `{m}`)", q.agent_type.as_str()),
            None => q.agent_type.as_str().to_string(),
        };
        let error = match (r.resolved, r.error) {
            (Some(c), None) => {
                resolved.push((q, c));
                continue;
            }
            (_, Some(e)) => match e.strip_suffix(air_proto::models::NO_PROVIDER_HINT) {
                // The hint below says it once.
                Some(short) => short.to_string(),
                None => e,
            },
            (None, None) => "the worker gave neither a model nor an error".to_string(),
        };
        match problems.iter_mut().find(|(e, _)| *e == error) {
            Some((_, agents)) => {
                if !agents.contains(&who) {
                    agents.push(who);
                }
            }
            None => problems.push((error, vec![who])),
        }
    }
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .map(|(e, agents)| format!("{e} (for {})", agents.join(", ")))
            .collect();
        return Err(format!(
            "no task was started, because no model answers:\n  {}\nA run uses the provider settings of the shell that starts it: set a key there (ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY), add a provider to ~/.air/models.yaml, or use a local model with --model ollama/NAME; `air doctor` shows what air finds.",
            lines.join("\n  ")
        ));
    }
    Ok(Models { flag, resolved })
}
