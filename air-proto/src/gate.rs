//! The evidence gates (seed 001 §8.2): what a WorkerResult must carry before its task
//! may complete. A pure function of the task and the result, shared: the worker checks
//! its own result before it sends it (a missing piece costs the agent one more turn,
//! not a new dispatch), and airsd's scheduler checks it again as the authority — a
//! result that fails a gate cannot complete the task, whatever its status says.

use crate::result::{VerificationStatus, WorkerResult, WorkerStatus};
use crate::task::{EvidenceType, TaskSpec};

/// File endings that count as C or C++ source (global rule 3).
const C_FAMILY: &[&str] = &[
    ".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx",
];

/// The evidence the task itself asks for: its own list, or its category's. (A result
/// may need more: see [`required_evidence`].)
pub fn task_evidence(spec: &TaskSpec) -> Vec<EvidenceType> {
    match &spec.verification.evidence_types {
        Some(list) => list.clone(),
        None => spec
            .category
            .map(|c| c.required_evidence().to_vec())
            .unwrap_or_default(),
    }
}

/// The evidence `result` must carry for `spec`: the task's list (or its category's),
/// plus the three global rules.
pub fn required_evidence(spec: &TaskSpec, result: &WorkerResult) -> Vec<EvidenceType> {
    let mut required = task_evidence(spec);
    // 1. failed or blocked needs a debugger's analysis.
    if matches!(result.status, WorkerStatus::Failed | WorkerStatus::Blocked) {
        required.push(EvidenceType::DebuggerAnalysis);
    }
    // 2. done without changing anything needs an explanation.
    if result.status == WorkerStatus::Completed && result.changed_files.is_empty() {
        required.push(EvidenceType::Explanation);
    }
    // 3. C and C++ changes need static analysis.
    if result.changed_files.iter().any(|f| is_c_family(f)) {
        required.push(EvidenceType::StaticAnalysis);
    }
    required.sort();
    required.dedup();
    required
}

fn is_c_family(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    C_FAMILY.iter().any(|ext| lower.ends_with(ext))
}

/// Checks a result that claims completion. `Err` lists every reason it cannot complete
/// the task.
pub fn check_completion(spec: &TaskSpec, result: &WorkerResult) -> Result<(), Vec<String>> {
    let mut reasons = Vec::new();
    for kind in required_evidence(spec, result) {
        let present = result
            .evidence_refs
            .iter()
            .any(|e| e.evidence_type == Some(kind));
        if !present {
            reasons.push(format!("missing {} evidence", kind.as_str()));
        }
    }
    if spec.verification.required {
        if result.verification.is_empty() {
            reasons.push("verification is required but no verification result was reported".into());
        }
        for v in &result.verification {
            let ok = match v.status {
                VerificationStatus::Passed => true,
                VerificationStatus::Skipped => spec.verification.fallback_allowed,
                VerificationStatus::Failed | VerificationStatus::Unknown => false,
            };
            if !ok {
                reasons.push(format!(
                    "verification `{}` is {}",
                    v.name,
                    match v.status {
                        VerificationStatus::Passed => "passed",
                        VerificationStatus::Failed => "failed",
                        VerificationStatus::Skipped => "skipped (no fallback allowed)",
                        VerificationStatus::Unknown => "unknown",
                    }
                ));
            }
        }
        if !result.verification.is_empty()
            && !result
                .verification
                .iter()
                .any(|v| v.status == VerificationStatus::Passed)
        {
            reasons.push("no verification passed".into());
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// Whether a failed result failed its build or tests (as opposed to giving up for
/// another reason).
pub fn failed_verification(result: &WorkerResult) -> Vec<String> {
    result
        .verification
        .iter()
        .filter(|v| v.status == VerificationStatus::Failed)
        .map(|v| v.name.clone())
        .collect()
}
