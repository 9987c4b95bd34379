//! Which model each agent of a run talks to, asked of the worker binary
//! (`air-worker --resolve`) before the run starts, and kept while nothing it depends
//! on changes.
//!
//! The worker is what reads provider keys and talks to providers, with the
//! environment airsd gives it, so it is the one to say whether a provider is there.
//! A run whose agents could not reach a model is refused before any task starts; the
//! answers give the ContextAssembler each model's window.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use air_proto::event::AgentType;
use air_proto::ipc::{ModelChoice, ModelQuery, ModelReply};
use air_proto::task::TaskSpec;

use crate::agents::supervisor::WorkerCommand;

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
    let models = resolve(worker, queries, run.model.clone()).await?;
    // A cost budget holds only where every model's tokens are priced.
    if let Some(max) = run.budgets.max_cost {
        let mut unpriced: Vec<String> = models
            .resolved
            .iter()
            .filter(|(_, c)| c.unpriced)
            .map(|(_, c)| format!("{}/{}", c.provider, c.model))
            .collect();
        unpriced.sort();
        unpriced.dedup();
        if !unpriced.is_empty() {
            return Err(format!(
                "max_cost ${max:.2} cannot be held: no price is known for {}, whose tokens would be counted as costing nothing; give it one in ~/.air/models.yaml under `prices:` (US dollars per million tokens, 0 for a free model), or run without max_cost",
                unpriced.join(", ")
            ));
        }
    }
    Ok(models)
}

/// Answers the worker gave, each under everything it depends on (see [`asked`]): the
/// run a conversation's first message starts, or a second run in the same settings,
/// asks nothing again.
static ANSWERS: Mutex<Vec<(String, Vec<ModelReply>)>> = Mutex::new(Vec::new());

/// The questions being asked of a worker now, each with the gate its askers take and,
/// once asked, the answer (kept only while someone waits for it).
#[allow(clippy::type_complexity)]
static ASKING: Mutex<Vec<(String, Arc<tokio::sync::Mutex<Option<Asked>>>)>> =
    Mutex::new(Vec::new());

/// A worker's answer, or what went wrong asking it.
type Asked = Result<Vec<ModelReply>, String>;

/// How many answers are kept.
const KEPT: usize = 16;

/// What an answer depends on, as one string: the worker (its path and its file's
/// identity and time, so a rebuilt worker is asked again), its arguments and
/// environment (keys included: a changed key is asked again), the queries, and the
/// files the worker reads for them (`models.yaml` in its air home, the recordings a
/// replay names).
fn asked(worker: &WorkerCommand, json: &str, queries: &[ModelQuery]) -> String {
    fn stamp(path: &Path) -> String {
        use std::os::unix::fs::MetadataExt as _;
        match std::fs::metadata(path) {
            Ok(m) => format!(
                "{}:{}:{}:{}.{}",
                m.dev(),
                m.ino(),
                m.len(),
                m.mtime(),
                m.mtime_nsec()
            ),
            Err(e) => format!("({})", e.kind()),
        }
    }
    let var = |name: &str| {
        worker
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
    };
    let air_home = var("AIR_HOME").or_else(|| var("HOME").map(|h| h.join(".air")));
    // In any order (a client's provider settings come after the daemon's others),
    // the last of a name counting, as for the process.
    let env: std::collections::BTreeMap<_, _> = worker.env.iter().map(|(k, v)| (k, v)).collect();
    let mut key = vec![
        worker.program.display().to_string(),
        stamp(&worker.program),
        format!("{:?}", worker.args),
        format!("{env:?}"),
        json.to_string(),
    ];
    if let Some(home) = air_home {
        key.push(stamp(&home.join("models.yaml")));
    }
    let mut dirs: Vec<&str> = queries.iter().filter_map(|q| q.replay.as_deref()).collect();
    dirs.dedup();
    for dir in dirs {
        key.push(stamp(Path::new(dir)));
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            key.extend(
                files
                    .iter()
                    .map(|f| format!("{}={}", f.display(), stamp(f))),
            );
        }
    }
    key.join("\n")
}

/// Asks the worker binary, or answers as it did for the same question; `Err` names
/// what went wrong with the asking itself.
pub async fn ask(
    worker: &WorkerCommand,
    queries: &[ModelQuery],
) -> Result<Vec<ModelReply>, String> {
    let json = serde_json::to_string(queries).map_err(|e| e.to_string())?;
    let key = asked(worker, &json, queries);
    let kept = |answers: &Vec<(String, Vec<ModelReply>)>| {
        answers
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.clone())
    };
    if let Some(replies) = ANSWERS.lock().ok().and_then(|a| kept(&a)) {
        return Ok(replies);
    }
    // A second asker of the same question waits for the first one's answer rather
    // than start the worker again (the daemon asks ahead as it starts), and takes it,
    // a failure too.
    let gate = {
        let mut gates = ASKING.lock().unwrap_or_else(|p| p.into_inner());
        gates.retain(|(_, g)| Arc::strong_count(g) > 1);
        match gates.iter().find(|(k, _)| *k == key) {
            Some((_, g)) => g.clone(),
            None => {
                let g = Arc::new(tokio::sync::Mutex::new(None));
                gates.push((key.clone(), g.clone()));
                g
            }
        }
    };
    let mut asking = gate.lock().await;
    if let Some(answered) = asking.as_ref() {
        return answered.clone();
    }
    if let Some(replies) = ANSWERS.lock().ok().and_then(|a| kept(&a)) {
        return Ok(replies);
    }
    let answered = ask_worker(worker, queries, &json).await;
    *asking = Some(answered.clone());
    // Those waiting now take this answer; a later asker asks again (or finds it kept).
    ASKING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(_, g)| !Arc::ptr_eq(g, &gate));
    let replies = answered?;
    if let Ok(mut answers) = ANSWERS.lock() {
        if answers.len() >= KEPT {
            answers.remove(0);
        }
        answers.push((key, replies.clone()));
    }
    Ok(replies)
}

async fn ask_worker(
    worker: &WorkerCommand,
    queries: &[ModelQuery],
    json: &str,
) -> Result<Vec<ModelReply>, String> {
    let program = worker.program.display().to_string();
    let child = tokio::process::Command::new(&worker.program)
        .args(&worker.args)
        .arg("--resolve")
        .arg(json)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt as _;

    /// A worker that counts how often it is asked, and each thing its answer depends
    /// on asking it again.
    #[tokio::test]
    async fn an_answer_is_kept_until_what_it_depends_on_changes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (count, home) = (dir.path().join("asked"), dir.path().join("air-home"));
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        let program = dir.path().join("worker");
        std::fs::write(
            &program,
            "#!/bin/sh\necho asked >> \"$COUNT\"\nprintf '%s' '[{\"resolved\":{\"provider\":\"test\",\"model\":\"m\",\"context_window\":1000,\"max_output\":100}}]'\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut worker = WorkerCommand {
            program,
            args: Vec::new(),
            env: vec![
                (OsString::from("COUNT"), count.clone().into_os_string()),
                (OsString::from("AIR_HOME"), home.clone().into_os_string()),
            ],
            cancel_grace: Duration::from_secs(1),
            queue: 16,
        };
        let query = [ModelQuery {
            agent_type: AgentType::Main,
            flag: None,
            task: None,
            replay: None,
        }];
        let asked = || {
            std::fs::read_to_string(&count)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let model = |r: Result<Vec<ModelReply>, String>| {
            r.unwrap_or_else(|e| panic!("{e}"))[0]
                .resolved
                .as_ref()
                .map(|c| c.model.clone())
        };
        assert_eq!(model(ask(&worker, &query).await), Some("m".into()));
        assert_eq!(model(ask(&worker, &query).await), Some("m".into()));
        assert_eq!(
            asked(),
            1,
            "the same question is answered from what was kept"
        );
        std::fs::write(home.join("models.yaml"), "default: anthropic/x\n")
            .unwrap_or_else(|e| panic!("{e}"));
        ask(&worker, &query).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(asked(), 2, "a new models.yaml is read again");
        worker
            .env
            .push((OsString::from("ANTHROPIC_API_KEY"), OsString::from("k")));
        ask(&worker, &query).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(asked(), 3, "another environment is asked again");
        let other = [ModelQuery {
            agent_type: AgentType::Executor,
            ..query[0].clone()
        }];
        ask(&worker, &other).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(asked(), 4, "another question is asked");
    }
}
