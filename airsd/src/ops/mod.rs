//! Operations: the logs airsd keeps — the rotating daemon log (`logfile`), the
//! user's log of what they can act on (`userlog`) and the encrypted developer log
//! (`devlog`).

pub mod devlog;
pub mod logfile;
pub mod userlog;
