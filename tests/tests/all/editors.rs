//! The editor configurations of docs/editors.md, tried in the editors that run here:
//! Neovim with CodeCompanion (installed by tests/run at a pinned commit) is set up
//! with the Lua block of docs/editors.md as written, and a chat in it is answered by
//! air over ACP; `air sessions` lists the editor's session.

use std::path::{Path, PathBuf};

use air_tests::mock_provider::{text_events, Exchange, MockProvider, Reply};

use crate::agents::key;
use crate::daemon::Project;

/// The Lua of the Neovim section of docs/editors.md.
fn documented_lua() -> String {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/editors.md"))
            .unwrap();
    let section = docs.split("## Neovim (CodeCompanion)").nth(1).unwrap();
    let block = section.split("```lua").nth(1).unwrap();
    block.split("```").next().unwrap().to_string()
}

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-tools")
}

#[test]
fn codecompanion_in_neovim_talks_to_air_with_the_documented_configuration() {
    let nvim = tools().join("bin/nvim");
    let plugins = tools().join("nvim-plugins");
    if !nvim.exists() || !plugins.join("codecompanion.nvim/lua").is_dir() {
        eprintln!("skipped: tests/run installs Neovim and CodeCompanion (it could not here)");
        return;
    }
    let p = Project::new();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![Exchange {
        request: None,
        expect: crate::conversation::expect(&["Say hello from the editor."], &[]),
        reply: Reply::Events(text_events("Hello from air over ACP.")),
    }]));
    let init = p.dir.path().join("init.lua");
    std::fs::write(
        &init,
        format!(
            "vim.opt.rtp:prepend({:?})\nvim.opt.rtp:prepend({:?})\n{}\ndofile({:?})\n",
            plugins.join("plenary.nvim").display().to_string(),
            plugins.join("codecompanion.nvim").display().to_string(),
            documented_lua(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("acp/codecompanion-drive.lua")
                .display()
                .to_string(),
        ),
    )
    .unwrap();
    let out = p.dir.path().join("chat.md");
    let air_dir = air_tests::bin("air").parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        air_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let status = rt
        .block_on(async {
            tokio::process::Command::new(&nvim)
                .args(["--headless", "-u"])
                .arg(&init)
                .current_dir(&p.root)
                .env("PATH", path)
                .env("AIR_HOME", p.dir.path().join("air-home"))
                .env("AIR_WORKER", air_tests::bin("air-worker"))
                .env("NV_OUT", &out)
                .env("XDG_STATE_HOME", p.dir.path().join("state"))
                .env("NV_PROMPT", "Say hello from the editor.")
                .env("NV_EXPECT", "Hello from air over ACP.")
                .env_remove("OPENAI_API_KEY")
                .env_remove("OPENROUTER_API_KEY")
                .env_remove("AIR_MODEL")
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .stdin(std::process::Stdio::null())
                .status()
                .await
        })
        .unwrap();
    let chat = std::fs::read_to_string(&out).unwrap_or_default();
    let log = std::fs::read_to_string(p.dir.path().join("state/nvim/codecompanion.log"))
        .unwrap_or_default();
    assert!(
        status.success(),
        "chat:\n{chat}\nCodeCompanion's log:\n{log}\nprovider: {:?}",
        mock.mismatches()
    );
    assert!(chat.contains("Hello from air over ACP."), "{chat}");
    let sessions = crate::run::command(&p, &["sessions"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&sessions.stdout).contains("Say hello from the editor"),
        "{}",
        String::from_utf8_lossy(&sessions.stdout)
    );
}
