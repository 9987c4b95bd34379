//! What airsd learns across sessions besides memory (`crate::memory`): the
//! project's debug knowledge (`knowledge`) and the full-text search it is found by
//! (`fts`).

pub mod fts;
pub mod knowledge;
