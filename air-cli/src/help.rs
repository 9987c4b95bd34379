//! `air --help`: the commands grouped under headings (clap lists subcommands in one
//! flat list), built from the commands themselves so that a description is written
//! once, and checked so that no command is missing from the groups.

use clap::CommandFactory;

/// The headings of `air --help` and the commands under each, in order.
const GROUPS: &[(&str, &[&str])] = &[
    ("Start and talk", &["chat", "run", "attach", "wait", "acp"]),
    ("Plans", &["plan", "change", "retry"]),
    (
        "Watch",
        &["status", "sessions", "log", "events", "cost", "diff"],
    ),
    ("Steer", &["approve", "deny", "pause", "resume", "cancel"]),
    ("Changes", &["land", "undo", "gc", "restore"]),
    (
        "Project",
        &[
            "init",
            "root",
            "doctor",
            "setup",
            "profile",
            "hooks",
            "mcp",
            "capability",
            "memory",
            "skills",
            "debug",
            "migrate",
        ],
    ),
    ("Daemon and shell", &["daemon", "completions", "version"]),
];

const BARE: &str = "With no command, `air` opens the terminal UI on the conversation of the newest session (a new one when the project has none).";

/// The command line of `air`, its help grouped.
pub fn command() -> clap::Command {
    let cmd = crate::Cli::command();
    let listing = grouped(&cmd);
    cmd.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{BARE}\n\n{listing}Options:\n{{options}}{{after-help}}"
    ))
}

/// The commands under their headings, each with the first line of its description.
fn grouped(cmd: &clap::Command) -> String {
    let width = cmd
        .get_subcommands()
        .map(|c| c.get_name().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (heading, names) in GROUPS {
        let lines: Vec<String> = names
            .iter()
            .filter_map(|n| cmd.find_subcommand(n))
            .filter(|c| !c.is_hide_set())
            .map(|c| {
                let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
                // The first sentence: the rest is in `air COMMAND --help`.
                let first = match about.find(". ") {
                    Some(end) => &about[..end],
                    None => about.trim_end_matches('.'),
                };
                format!("  {:width$}  {first}\n", c.get_name())
            })
            .collect();
        if !lines.is_empty() {
            out.push_str(&format!("{heading}:\n{}\n", lines.concat()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_under_one_heading() {
        let cmd = crate::Cli::command();
        let listed: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        for c in cmd.get_subcommands() {
            let n = listed.iter().filter(|l| **l == c.get_name()).count();
            assert_eq!(
                n,
                1,
                "`air {}` is under {n} headings of air --help",
                c.get_name()
            );
        }
        for l in &listed {
            assert!(
                cmd.find_subcommand(l).is_some(),
                "`{l}` is in GROUPS but is no command"
            );
        }
    }

    /// Every command of the tree under `cmd`, with its path (`air plan new`).
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    fn every_command() -> Vec<(String, clap::Command)> {
        let mut root = command();
        root.build();
        let mut all = Vec::new();
        walk(&root, "air", &mut all);
        all
    }

    #[test]
    fn every_argument_and_command_says_what_it_is() {
        let mut blank = Vec::new();
        for (path, cmd) in every_command() {
            if cmd.get_about().is_none() && path != "air" {
                blank.push(format!("{path}: the command"));
            }
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    blank.push(format!("{path}: {id}"));
                }
            }
        }
        assert!(blank.is_empty(), "no description:\n{}", blank.join("\n"));
    }

    #[test]
    fn every_help_as_it_reads() {
        let mut all = String::new();
        for (path, mut cmd) in every_command() {
            let help = if path == "air" {
                cmd.render_help()
            } else {
                cmd.render_long_help()
            };
            all.push_str(&format!("===== {path} --help\n{help}\n"));
        }
        insta::assert_snapshot!("every_help", all);
    }
}
