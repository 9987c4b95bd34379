//! The API as an OpenRPC document, generated from the method table and the Rust types
//! (committed as `docs/api.openrpc.json`; a test fails when it is stale).
//! `session.subscribe`'s notifications are described under `x-notification`.

use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

/// The whole document.
pub fn openrpc() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator();
    let mut param_types = Vec::new();
    let methods = super::methods::described(&mut generator, &mut param_types);
    let mut schemas = generator.take_definitions(true);
    // The params structs are described param by param, not as schemas of their own.
    for name in param_types {
        schemas.remove(&name);
    }
    json!({
        "openrpc": "1.3.2",
        "info": { "title": "airsd", "version": crate::PROTOCOL_VERSION.to_string(), "description": "The JSON-RPC API of the air daemon (see docs/protocol.md)" },
        "methods": methods,
        "components": { "schemas": schemas }
    })
}
