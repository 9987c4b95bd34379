//! The run's budgets (time, tokens, cost): when one is spent the run stops
//! dispatching; the agents running finish their work.

use super::*;

/// What the run has spent, as last observed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Usage {
    pub tokens: u64,
    pub cost_micro_usd: u64,
}

/// The first budget `budgets` has spent, as (its name, why), if any.
fn spent(budgets: &Budgets, elapsed_ms: u64, usage: Usage) -> Option<(&'static str, String)> {
    if let Some(max) = budgets.max_time_ms {
        if elapsed_ms >= max {
            return Some((
                "max_time",
                format!(
                    "the time budget ({}) ran out",
                    humantime::format_duration(std::time::Duration::from_millis(max))
                ),
            ));
        }
    }
    let mut found = None;
    if let Some(max) = budgets.max_tokens {
        if usage.tokens >= max {
            found = Some(("max_tokens", format!("the token budget ({max}) ran out")));
        }
    }
    if let Some(max) = budgets.max_cost {
        let cost = usage.cost_micro_usd as f64 / 1e6;
        if cost >= max {
            found = Some((
                "max_cost",
                format!("the cost budget ({}) ran out", dollars(max)),
            ));
        }
    }
    found
}

/// A sum of money as people read it: cents from a dollar up, else as many places as
/// it takes (`$0.0003`, not `$0.00`).
fn dollars(x: f64) -> String {
    if x >= 1.0 {
        return format!("${x:.2}");
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0');
    format!("${}", s.strip_suffix('.').unwrap_or(s))
}

impl Core {
    /// Decides the stop when a budget is spent (once: until a continuation brings new
    /// budgets). True when it did.
    pub(super) fn budget_spent(&mut self, now_ms: u64, out: &mut Vec<Decision>) -> bool {
        if self.stopping_for_budget || self.stopped.is_some() {
            return false;
        }
        let elapsed = now_ms.saturating_sub(self.budgets_from_ms);
        let Some((budget, reason)) = spent(&self.budgets, elapsed, self.usage) else {
            return false;
        };
        self.stopping_for_budget = true;
        out.push(Decision::StopForBudget {
            budget: budget.to_string(),
            reason,
        });
        true
    }
}
