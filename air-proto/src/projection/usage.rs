//! What a task's model turns used and cost, summed over its agents and attempts.

use serde::{Deserialize, Serialize};

use crate::payload as p;

/// Tokens and cost of a task's model turns.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TaskUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Millionths of a US dollar, of the turns whose model's prices are known.
    pub cost_micro_usd: u64,
}

impl TaskUsage {
    pub fn is_zero(&self) -> bool {
        *self == TaskUsage::default()
    }

    /// Adds one turn's usage.
    pub fn add(&mut self, u: &p::Usage) {
        self.input_tokens = self.input_tokens.saturating_add(u.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(u.output_tokens);
        self.cost_micro_usd = self
            .cost_micro_usd
            .saturating_add(u.cost_micro_usd.unwrap_or(0));
    }
}
