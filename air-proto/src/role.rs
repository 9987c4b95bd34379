//! The agent roles, shared by every contract that names one (events, results,
//! contexts, the worker pipe).

wire_enum! {
    /// The agent roles. The seeds' worker set (executor … experience_miner) plus the two
    /// roles that also run as worker processes here: the architecture designer (milestone
    /// reviews) and the main agent.
    pub enum AgentType {
        Executor = "executor",
        Reviewer = "reviewer",
        Debugger = "debugger",
        Compactor = "compactor",
        ExperienceMiner = "experience_miner",
        ArchitectureDesigner = "architecture_designer",
        Main = "main",
    }
}
