//! The API as an OpenRPC document, generated from the method table and the Rust types
//! (committed as `docs/api.openrpc.json`; a test fails when it is stale).
//! `session.subscribe`'s notifications are described under `x-notification`.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Value};

use super::methods::Params;

/// One method: its params by name (with their schemas and whether each is required)
/// and its result.
pub(super) fn method<P: Params, R: JsonSchema>(
    generator: &mut SchemaGenerator,
    kept: &mut Vec<String>,
    name: &str,
    summary: &str,
    result: &str,
) -> Value {
    generator.subschema_for::<P>();
    let type_name = P::schema_name().to_string();
    let def = generator
        .definitions()
        .get(&type_name)
        .cloned()
        .unwrap_or(Value::Null);
    kept.push(type_name);
    let required: Vec<&str> = def["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<Value> = P::NAMES
        .iter()
        .map(|n| json!({ "name": n, "required": required.contains(n), "schema": def["properties"][*n] }))
        .collect();
    let result = json!({ "name": result, "schema": generator.subschema_for::<R>().to_value() });
    json!({ "name": name, "summary": summary, "paramStructure": "either", "params": params, "result": result })
}

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
