//! A call of an MCP server's tool: who may call it, the person's yes when its
//! server does not say it is harmless (MCP's default), then the call, whose
//! connections out are asked about through it.

use std::sync::Arc;

use air_proto::event::AgentType;
use air_proto::plan::PermissionMode;
use serde_json::Value;

use super::ToolJob;
use crate::tools::permission::Ask;
use crate::tools::ToolError;

/// Most characters of a call's input shown in its question.
const SHOWN_INPUT: usize = 400;

impl ToolJob {
    pub(super) async fn mcp_call(&self, tool_run_id: &str) -> Result<Value, ToolError> {
        let hub = &self.env.mcp;
        let Some(found) = hub.find(&self.call.tool) else {
            let (_, down) = hub.found();
            let down: Vec<String> = down
                .iter()
                .map(|(s, why)| format!("`{s}`: {why}"))
                .collect();
            return Err(ToolError(format!(
                "no MCP tool `{}` in this run{}",
                self.call.tool,
                if down.is_empty() {
                    String::new()
                } else {
                    format!(" (servers not up: {})", down.join("; "))
                }
            )));
        };
        let evidence = self.role == AgentType::Debugger && {
            let (session, agent) = (self.env.session.clone(), self.agent_id.clone());
            let failure = self.failure.clone().unwrap_or_default();
            let root = self.env.engine.root().to_path_buf();
            tokio::task::spawn_blocking(move || {
                super::has_evidence(&session, &agent, &failure, &root)
            })
            .await
            .unwrap_or(false)
        };
        let mode = self.env.engine.mode();
        if let Some(why) =
            crate::mcp::refusal(self.role, &found, evidence, mode == PermissionMode::Plan)
        {
            return Err(ToolError(why));
        }
        if let Some((risk, reason)) = found.asks() {
            if mode != PermissionMode::BypassPermissions || risk.always_asks() {
                let mut input = self.call.input.to_string();
                if let Some((i, _)) = input.char_indices().nth(SHOWN_INPUT) {
                    input.truncate(i);
                    input.push('…');
                }
                let ask = Ask {
                    key: format!("mcp:{}:{}", found.server, found.tool.name),
                    action: format!("call `{}` with {input}", found.name),
                    risk,
                    reason: reason.to_string(),
                };
                self.ask_person(tool_run_id, &[ask])
                    .await
                    .map_err(ToolError)?;
            }
        }
        hub.call(
            &found,
            self.call.input.clone(),
            tool_run_id,
            Arc::new(self.asker(tool_run_id)),
        )
        .await
        .map_err(ToolError)
    }
}
