//! The project airsd serves, as it is: its scan (`scan`), the profile detected from
//! it (`project_profile`) and the Main Agent's proposal of one (`profile_proposal`),
//! what the machine has of what it needs (`dependencies`), and the migrations of its
//! `.air` (`migrate`). Each has a hidden subcommand of airsd for `air init`,
//! `air doctor` and `air migrate`; and the lock that keeps one daemon per project
//! (`lock`).

pub mod dependencies;
pub mod lock;
pub mod migrate;
pub mod profile_proposal;
pub mod project_profile;
pub mod scan;
