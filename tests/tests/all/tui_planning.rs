//! Planning in `air attach`, the real binaries in real terminals (tmux) with the real
//! `air-worker` against the loopback provider: `/plan …` typed in one terminal; the
//! requirements the Architecture Designer states are agreed there; its proposal shows
//! as a dialog in both terminals, is confirmed from the second and closes in both; the
//! plan's one confirmation for its tasks is given, and the plan runs to its summary.

use air_tests::mock_provider::{Exchange, MockProvider};
use serde_json::json;

use crate::agents::{any, call};
use crate::daemon::Project;
use crate::tui::Tmux;

#[test]
fn a_proposal_in_two_terminals_is_confirmed_from_one_and_closes_in_both() {
    let p = Project::new();
    let rt = crate::provider_rt();
    let mut exchanges = vec![
        Exchange {
            request: None,
            expect: any(),
            reply: call(
                "d1",
                "settle_requirements",
                json!({"requirements": ["hello.txt in the project root says hello."]}),
            ),
        },
        Exchange {
            request: None,
            expect: any(),
            reply: call(
                "d2",
                "propose_plan",
                crate::planning::proposal(&crate::planning::hello_plan("")),
            ),
        },
    ];
    exchanges.extend(crate::conversation::hello_work(
        any(),
        call(
            "e1",
            "fs_write",
            json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        "Wrote hello.txt.",
    ));
    exchanges.push(Exchange {
        request: None,
        expect: any(),
        reply: crate::conversation::text("Done: the plan wrote hello.txt."),
    });
    let mock = rt.block_on(MockProvider::start(exchanges));
    let env = crate::tui_chat::daemon_for(&p, &mock);

    let tmux = Tmux::new();
    tmux.run_air("one", &p.root, &env, "");
    tmux.wait_for(
        "one",
        &|s| s.contains("Conversation — IDLE"),
        "air did not open the conversation",
    );
    tmux.run_air("two", &p.root, &env, "attach");
    tmux.wait_for(
        "two",
        &|s| s.contains("Conversation — IDLE"),
        "the second terminal did not show the conversation",
    );
    tmux.type_text("one", "/plan a hello file");
    tmux.keys("one", "Enter");
    let stated = |s: &str| {
        s.contains("Requirements (plan:1)") && s.contains("hello.txt in the project root")
    };
    let shown = tmux.wait_for("one", &stated, "the stated requirements are not shown");
    assert!(shown.contains("Esc, then a agree"), "{shown}");
    tmux.wait_for("two", &stated, "not shown in the other terminal");
    tmux.keys("one", "Escape");
    tmux.keys("one", "a");

    // The proposal, in both terminals; confirmed from the second.
    let proposed = |s: &str| s.contains("Proposed plan (plan:2)") && s.contains("wave 1  T1");
    tmux.wait_for("one", &proposed, "no proposal dialog");
    tmux.wait_for("two", &proposed, "no proposal dialog in the other terminal");
    tmux.keys("two", "Escape");
    tmux.keys("two", "a");
    let closed =
        |s: &str| !s.contains("Proposed plan") && s.contains("plan:2 confirmed by air attach (pid");
    tmux.wait_for("two", &closed, "the dialog did not close");
    tmux.wait_for(
        "one",
        &closed,
        "the dialog did not close in the other terminal",
    );

    // The default permission mode asks once for the whole plan.
    let asks =
        |s: &str| s.contains("Permission") && s.contains("run the confirmed plan (1 task(s))");
    tmux.wait_for("one", &asks, "the plan's tasks were not put to the user");
    tmux.keys("one", "a");
    let done = |s: &str| s.contains("Done: the plan wrote hello.txt.");
    tmux.wait_for("one", &done, "no summary");
    tmux.wait_for("two", &done, "no summary in the other terminal");
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(p.root.join(".air/shared/plan/plan.md").exists());
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    for w in ["one", "two"] {
        tmux.keys(w, "q");
        tmux.wait_for(w, &|s| s.contains("DETACHED"), "did not detach");
    }
}
