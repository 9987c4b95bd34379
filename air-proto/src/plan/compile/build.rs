//! The end of compilation: the collected tasks become the [`TaskGraph`] (ids resolved,
//! dependencies checked, cycles found, waves layered) and each its [`TaskSpec`] with
//! the plan's defaults applied.

use super::*;

impl Compiler<'_> {
    pub(super) fn build(mut self) -> Result<Compiled, PlanErrors> {
        if self.tasks.is_empty() {
            self.errors.push(PlanDiagnostic::new(
                1,
                None,
                "the plan has no tasks: give each task a heading like `## Task T1: Add the parser`",
            ));
        }
        let mut first_line: HashMap<String, u32> = HashMap::new();
        let builders = std::mem::take(&mut self.tasks);
        for task in &builders {
            if let Some(first) = first_line.get(&task.id) {
                let mut d = PlanDiagnostic::new(
                    task.line,
                    Some("id"),
                    format!(
                        "duplicate task id `{}` (first defined at line {first})",
                        task.id
                    ),
                );
                d.task_id = Some(task.id.clone());
                self.errors.push(d);
            } else {
                first_line.insert(task.id.clone(), task.line);
            }
        }
        let mut specs = Vec::with_capacity(builders.len());
        for task in builders {
            let spec = self.spec(task, &first_line);
            specs.push(spec);
        }
        let layering = layer(&specs);
        for cycle in &layering.cycles {
            let id = cycle.first().cloned().unwrap_or_default();
            let line = first_line.get(&id).copied().unwrap_or(1);
            let mut d = PlanDiagnostic::new(
                line,
                Some("depends_on"),
                format!("dependency cycle: {}", cycle_path(cycle)),
            );
            d.task_id = Some(id);
            self.errors.push(d);
        }
        if !self.errors.is_empty() {
            self.errors.sort_by_key(|e| e.line);
            return Err(PlanErrors {
                file: self.file.to_string(),
                errors: self.errors,
            });
        }
        let overview = self.source(&self.overview.clone());
        self.warnings.sort_by_key(|w| w.line);
        Ok(Compiled {
            graph: TaskGraph {
                version: TASK_GRAPH_VERSION,
                title: self.title,
                source: Some(self.file.to_string()),
                overview: (!overview.is_empty()).then_some(overview),
                settings: self.settings,
                phases: self.phases,
                tasks: specs,
                waves: layering.waves,
            },
            warnings: self.warnings,
        })
    }

    pub(super) fn spec(&mut self, task: TaskBuilder, ids: &HashMap<String, u32>) -> TaskSpec {
        let diag = |line: u32, field: &str, message: String| {
            let mut d = PlanDiagnostic::new(line, Some(field), message);
            d.task_id = Some(task.id.clone());
            d
        };
        let mut dependencies: Vec<TaskDependency> = Vec::new();
        for dep in &task.deps {
            if dep.id == task.id {
                self.errors.push(diag(
                    dep.line,
                    dep.field,
                    format!("task {} depends on itself", task.id),
                ));
                continue;
            }
            if !ids.contains_key(&dep.id) {
                self.errors.push(diag(
                    dep.line,
                    dep.field,
                    format!("unknown task `{}`: no task in the plan has this id", dep.id),
                ));
                continue;
            }
            let kind = dep.kind.unwrap_or(DependencyType::Hard);
            if dependencies
                .iter()
                .any(|d| d.depends_on_task_id == dep.id && d.dependency_type == kind)
            {
                continue;
            }
            dependencies.push(TaskDependency {
                depends_on_task_id: dep.id.clone(),
                dependency_type: kind,
                reason: dep.reason.clone(),
                source: Some(DependencySource::User),
            });
        }
        let defaults = &self.settings.defaults;
        let soft = task
            .soft_timeout_ms
            .map(|(ms, _)| ms)
            .or(defaults.soft_timeout_ms)
            .unwrap_or(DEFAULT_SOFT_TIMEOUT_MS);
        let hard = task
            .hard_timeout_ms
            .map(|(ms, _)| ms)
            .or(defaults.hard_timeout_ms)
            .unwrap_or(DEFAULT_HARD_TIMEOUT_MS)
            .max(if task.hard_timeout_ms.is_none() {
                soft
            } else {
                0
            });
        if soft > hard {
            let line = task
                .soft_timeout_ms
                .or(task.hard_timeout_ms)
                .map(|(_, l)| l)
                .unwrap_or(task.line);
            self.errors.push(diag(
                line,
                "soft_timeout",
                format!("the soft timeout ({soft} ms) is longer than the hard timeout ({hard} ms)"),
            ));
        }
        let mut evidence: Vec<EvidenceType> = match &task.evidence {
            Some(list) => list.clone(),
            None => task
                .category
                .map(|c| c.required_evidence().to_vec())
                .unwrap_or_default(),
        };
        for (marker, line) in &task.markers {
            match opt_out(marker) {
                Ok(kind) => {
                    if !evidence.contains(&kind) {
                        self.warnings.push(diag(
                            *line,
                            "evidence",
                            format!("`{marker}` opts out of evidence the task does not require"),
                        ));
                    }
                    evidence.retain(|e| *e != kind);
                }
                Err(message) => self.errors.push(diag(*line, "evidence", message)),
            }
        }
        evidence.sort();
        evidence.dedup();
        // Evidence no tool records yet: the task could never complete.
        for kind in evidence.iter().filter(|k| {
            task.task_type == TaskType::Execute
                && crate::gate::source(**k) == crate::gate::Source::NoTool
        }) {
            self.errors.push(diag(
                task.line,
                "evidence",
                format!(
                    "task {} requires {}, which no tool of air records yet, so it cannot complete: opt out with [no-{}] in its title (or `evidence: no-{}`) until such a tool lands",
                    task.id,
                    kind.as_str(),
                    kind.as_str().replace('_', "-"),
                    kind.as_str().replace('_', "-")
                ),
            ));
        }
        if task.task_type == TaskType::Execute && task.category.is_none() && task.evidence.is_none()
        {
            let guess = task
                .expected_files
                .as_deref()
                .and_then(crate::gate::category_of_change)
                .map(|c| {
                    let kinds: Vec<&str> =
                        c.required_evidence().iter().map(|k| k.as_str()).collect();
                    format!(
                        " (its expected files are {}: {})",
                        c.as_str(),
                        if kinds.is_empty() {
                            "none".to_string()
                        } else {
                            kinds.join(", ")
                        }
                    )
                })
                .unwrap_or_default();
            self.warnings.push(diag(
                task.line,
                "category",
                format!(
                    "task {} has no category: it needs the evidence of what its attempt changes{guess}",
                    task.id
                ),
            ));
        }
        if task.task_type == TaskType::Execute && task.acceptance.is_empty() {
            self.warnings.push(diag(
                task.line,
                "acceptance_criteria",
                format!(
                    "task {} has no acceptance criteria; the reviewer will judge against the description only",
                    task.id
                ),
            ));
        }
        let description = self.source(&task.description);
        let required = task
            .verification_required
            .unwrap_or(!task.commands.is_empty());
        TaskSpec {
            id: task.id.clone(),
            task_type: task.task_type,
            title: task.title,
            description,
            acceptance_criteria: task.acceptance,
            category: task.category,
            phase: task.phase,
            scope: TaskScope {
                write_area: task.write_area,
                expected_files: task.expected_files,
                allowed_paths: task.allowed_paths,
                denied_paths: task.denied_paths,
                preserved_paths: task.preserved_paths,
            },
            contracts: Contracts {
                provides: (!task.provides.is_empty()).then_some(task.provides),
                requires: (!task.requires.is_empty()).then_some(task.requires),
            },
            dependencies,
            verification: Verification {
                commands: (!task.commands.is_empty()).then_some(task.commands),
                required,
                fallback_allowed: task.fallback_allowed,
                // A task that names its evidence (`evidence: none` too) keeps that
                // list; one with neither a list nor a category is judged by what its
                // attempt changes (`gate::judged_by_change`).
                evidence_types: (!evidence.is_empty() || task.evidence.is_some())
                    .then_some(evidence),
                declared: (!task.declared.is_empty()).then(|| {
                    task.declared
                        .into_iter()
                        .map(|(command, evidence_type)| crate::task::DeclaredCheck {
                            command,
                            evidence_type,
                        })
                        .collect()
                }),
            },
            constraints: Constraints {
                max_turns: task
                    .max_turns
                    .or(defaults.max_turns)
                    .unwrap_or(DEFAULT_MAX_TURNS),
                soft_timeout_ms: soft,
                hard_timeout_ms: hard,
                retry_budget: task
                    .retry_budget
                    .or(defaults.retry_budget)
                    .unwrap_or(DEFAULT_RETRY_BUDGET),
                model_policy: task
                    .model_policy
                    .or(defaults.model_policy)
                    .unwrap_or(ModelPolicy::SchedulerForced),
                model_id: task.model_id.or_else(|| defaults.model_id.clone()),
            },
            context_refs: ContextRefs {
                plan_ref: Some(format!("{}#{}", self.file, task.id)),
                ..ContextRefs::default()
            },
            output_contract: task.task_type.output_contract(),
        }
    }
}
