//! A JSON-RPC middleware that checks every call's params against the API's param structs
//! before the method runs, so that a bad param is refused naming its JSON path
//! (`session_id: invalid type: integer `42`, expected a string`).

use air_proto::api::codes;
use jsonrpsee::server::middleware::rpc::{Batch, Notification, Request, RpcServiceT};
use jsonrpsee::server::MethodResponse;
use jsonrpsee::types::ErrorObjectOwned;

#[derive(Clone, Copy, Debug, Default)]
pub struct ValidateLayer;

impl<S> tower::Layer<S> for ValidateLayer {
    type Service = ValidateParams<S>;

    fn layer(&self, service: S) -> Self::Service {
        ValidateParams { service }
    }
}

#[derive(Clone, Debug)]
pub struct ValidateParams<S> {
    service: S,
}

impl<S> RpcServiceT for ValidateParams<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse> + Send + Sync + Clone + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(
        &self,
        req: Request<'a>,
    ) -> impl std::future::Future<Output = MethodResponse> + Send + 'a {
        let service = self.service.clone();
        async move {
            let method = req.method_name().to_string();
            if let Some(Err(message)) =
                air_proto::api::params::validate(&method, req.params().as_str())
            {
                let err = ErrorObjectOwned::owned(
                    codes::INVALID_PARAMS,
                    format!("invalid params of `{method}`: {message}"),
                    Some(serde_json::json!({ "kind": air_proto::error::ErrorKind::InvalidInput })),
                );
                return MethodResponse::error(req.id(), err);
            }
            service.call(req).await
        }
    }

    fn batch<'a>(
        &self,
        batch: Batch<'a>,
    ) -> impl std::future::Future<Output = Self::BatchResponse> + Send + 'a {
        // Calls inside a batch get jsonrpsee's own param errors.
        self.service.batch(batch)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl std::future::Future<Output = Self::NotificationResponse> + Send + 'a {
        self.service.notification(n)
    }
}
