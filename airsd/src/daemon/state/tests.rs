//! The tests of `state`.

use super::*;

/// A daemon's state on a fresh project, and a runtime to drive it.
fn fresh() -> (tempfile::TempDir, DaemonState, tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let report = air_proto::layout::init(dir.path(), "t").unwrap();
    let paths = ProjectPaths::new(dir.path());
    let state = DaemonState::new(
        paths.clone(),
        report.project,
        paths.socket(),
        Duration::ZERO,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (dir, state, rt)
}

#[test]
fn a_client_opening_sessions_without_end_keeps_a_bounded_number_open() {
    let (_dir, state, rt) = fresh();
    rt.block_on(async {
        let mut ids = Vec::new();
        for _ in 0..MOST_OPEN_SESSIONS + 8 {
            ids.push(
                state
                    .create_session(SessionCreate::default())
                    .await
                    .unwrap()
                    .id,
            );
        }
        assert_eq!(state.open_sessions().await, MOST_OPEN_SESSIONS);
        // The first ones closed, and reopen when asked for.
        assert_eq!(state.session_info(&ids[0]).await.unwrap().seq, 1);
        assert_eq!(state.open_sessions().await, MOST_OPEN_SESSIONS);
        state.close_sessions().await;
    });
}

#[test]
fn idle_sessions_close_and_reopen_on_demand() {
    let (_dir, state, rt) = fresh();
    rt.block_on(async {
        let a = state
            .create_session(SessionCreate::default())
            .await
            .unwrap();
        let b = state
            .create_session(SessionCreate::default())
            .await
            .unwrap();
        let held = state.session(&b.id).await.unwrap();
        assert_eq!(state.open_sessions().await, 2);
        state.close_idle_sessions(Duration::ZERO).await;
        assert_eq!(
            state.open_sessions().await,
            1,
            "a session in use stays open"
        );
        drop(held);
        let again = state.session_info(&a.id).await.unwrap();
        assert_eq!(again.seq, 1, "a closed session reopens on demand");
        state.close_sessions().await;
        assert!(matches!(
            state.session(&a.id).await,
            Err(Error::ShuttingDown)
        ));
    });
}
