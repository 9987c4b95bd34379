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
        if req.method() != http::Method::POST {
            return Box::pin(async move { inner.call(req).await });
        }
        // A request whose id JSON-RPC does not allow (an object, a list, a fraction, a
        // number past what an id may be) is answered with the error the protocol
        // names, never with an empty `null`.
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let read =
                jsonrpsee::core::http_helpers::read_body(&parts.headers, body, super::MAX_BODY)
                    .await;
            let bytes = match read {
                Ok((bytes, _)) => bytes,
                Err(jsonrpsee::core::http_helpers::HttpError::TooLarge) => {
                    return Ok(error_answer(
                        http::StatusCode::PAYLOAD_TOO_LARGE,
                        -32600,
                        &format!("the request is larger than {} bytes", super::MAX_BODY),
                    ))
                }
                Err(e) => {
                    return Ok(error_answer(
                        http::StatusCode::BAD_REQUEST,
                        -32700,
                        &format!("parse error: {e}"),
                    ))
                }
            };
            if let Some(why) = bad_id(&bytes) {
                return Ok(error_answer(http::StatusCode::OK, -32600, &why));
            }
            let req = http::Request::from_parts(parts, jsonrpsee::server::HttpBody::from(bytes));
            inner.call(req).await
        })
    }
}

/// A JSON-RPC error answer with a null id.
fn error_answer(
    status: http::StatusCode,
    code: i32,
    message: &str,
) -> jsonrpsee::server::HttpResponse {
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "error": { "code": code, "message": message },
        "id": null,
    });
    let mut response =
        jsonrpsee::server::HttpResponse::new(jsonrpsee::server::HttpBody::from(answer.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Why a request's id (or one of a batch's) is not one JSON-RPC allows here: a
/// string, an integer from 0 to 2^64 − 1, or null; `None` when they are, or when the
/// body is not JSON (the server answers that itself).
fn bad_id(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let requests = match &value {
        serde_json::Value::Array(items) => items.iter().collect::<Vec<_>>(),
        one => vec![one],
    };
    requests.iter().find_map(|r| {
        let id = r.get("id")?;
        let fine = match id {
            serde_json::Value::String(_) | serde_json::Value::Null => true,
            serde_json::Value::Number(n) => n.as_u64().is_some(),
            _ => false,
        };
        (!fine).then(|| {
            format!(
                "invalid request: `id` {id} is not an id (a string, an integer from 0 to 2^64 - 1, or null)"
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::bad_id;

    #[test]
    fn ids_json_rpc_does_not_allow_are_named() {
        for body in [
            r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":{},"method":"m"}]"#,
        ] {
            assert!(bad_id(body.as_bytes()).is_some(), "{body}");
        }
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m"}"#,
            "not json",
        ] {
            assert!(bad_id(body.as_bytes()).is_none(), "{body}");
        }
    }
}
