//! The agents' processes: the worker supervisor that starts `air-worker` and speaks
//! NDJSON with it (`supervisor`), and the model each agent of a run talks to
//! (`models`).

pub mod models;
pub mod supervisor;
