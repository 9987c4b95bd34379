//! The per-connection service: tags every request with who is connected, and keeps a
//! connection counted until its WebSocket session (if it upgrades) has closed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use jsonrpsee::server::TowerService;
use tower::layer::util::Identity;
use tower::Service;

use super::rpc::Peer;
use super::state::DaemonState;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
type ResponseFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<jsonrpsee::server::HttpResponse, BoxError>> + Send>,
>;

#[derive(Clone)]
pub struct PeerService {
    pub inner: TowerService<Identity, Identity>,
    pub peer: Peer,
    pub state: Arc<DaemonState>,
    /// Set once the connection upgraded to a WebSocket.
    pub upgraded: Arc<AtomicBool>,
}

impl Service<http::Request<hyper::body::Incoming>> for PeerService {
    type Response = jsonrpsee::server::HttpResponse;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<hyper::body::Incoming>) -> Self::Future {
        req.extensions_mut().insert(self.peer);
        let mut inner = self.inner.clone();
        if jsonrpsee::server::ws::is_upgrade_request(&req)
            && !self.upgraded.swap(true, Ordering::SeqCst)
        {
            let closed = inner.on_session_closed();
            let state = self.state.clone();
            let conn = self.peer.conn;
            tokio::spawn(async move {
                closed.await;
                state.connection_closed(conn);
            });
        }
        Box::pin(async move { inner.call(req).await })
    }
}
