//! Tool metadata (D-044): what a tool is, which schemas it validates against and which
//! permissions it needs. The `execute` half of the seeds' interface lives in airsd.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub version: u32,
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the output.
    pub output_schema: Value,
    pub category: ToolCategory,
    pub permissions: ToolPermissions,
    pub streaming: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    Filesystem,
    Shell,
    Build,
    Test,
    Debug,
    StaticAnalysis,
    Gui,
    Network,
    Memory,
    Project,
    Internal,
    /// A tool of an MCP server.
    Mcp,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPermissions {
    pub read_paths: Option<PathPolicy>,
    pub write_paths: Option<PathPolicy>,
    pub execute: Option<bool>,
    pub network: Option<bool>,
    pub system_sensitive: Option<bool>,
}

/// Which paths a tool may touch before the PermissionEngine narrows it further.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathPolicy {
    /// Only the task's scope (allowed_paths minus denied_paths).
    TaskScope,
    /// Anywhere inside the project.
    Project,
    /// Anywhere the PermissionEngine allows, including outside the project.
    Anywhere,
}

/// A JSON Schema made as small as it can be without losing what a model needs: an
/// optional field's `anyOf [X, null]` becomes X (it is optional by not being
/// required), `type: [T, "null"]` becomes T, defaults that say nothing (`null`,
/// `false`, `[]`) and the integer `format` words go, line breaks in descriptions
/// become spaces, and a `oneOf` of described constants becomes an `enum` whose
/// description names each. Tool schemas go to the model in every request.
pub fn compact_schema(schema: &mut Value) {
    if let Value::Object(o) = schema {
        o.remove("$schema");
        o.remove("title");
        // A definition is described where it is used (each property has its own
        // description); what the type itself is called for goes without saying.
        if let Some(Value::Object(defs)) = o.get_mut("$defs") {
            for d in defs.values_mut() {
                if let Value::Object(d) = d {
                    d.remove("description");
                }
            }
        }
    }
    compact(schema);
}

fn compact(schema: &mut Value) {
    let Value::Object(o) = schema else {
        if let Value::Array(a) = schema {
            a.iter_mut().for_each(compact);
        }
        return;
    };
    let empty = |v: &Value| {
        v.is_null() || *v == Value::Bool(false) || v.as_array().is_some_and(Vec::is_empty)
    };
    if o.get("default").is_some_and(empty) {
        o.remove("default");
    }
    if o.get("format").and_then(Value::as_str).is_some_and(|f| {
        f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
    }) {
        o.remove("format");
    }
    // A count's lower bound goes without saying (the input is checked all the same).
    if o.get("type").and_then(Value::as_str) == Some("integer")
        && o.get("minimum").and_then(Value::as_u64) == Some(0)
    {
        o.remove("minimum");
    }
    if let Some(Value::Array(types)) = o.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            o.insert("type".into(), kept[0].clone());
        }
    }
    if let Some(Value::Array(any)) = o.get("anyOf") {
        let kept: Vec<Value> = any
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if kept.len() == 1 && any.len() == 2 {
            o.remove("anyOf");
            if let Value::Object(inner) = &kept[0] {
                for (k, v) in inner {
                    o.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
    if let Some(Value::Array(one)) = o.get("oneOf") {
        let consts: Option<Vec<(Value, Option<String>)>> = one
            .iter()
            .map(|c| {
                Some((
                    c.get("const")?.clone(),
                    c.get("description")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                ))
            })
            .collect();
        let kind = one.first().and_then(|c| c.get("type")).cloned();
        if let (Some(consts), Some(kind)) = (consts, kind) {
            let said: Vec<String> = consts
                .iter()
                .filter_map(|(c, d)| {
                    Some(format!(
                        "`{}`: {}",
                        c.as_str()?,
                        d.as_deref()?.trim_end_matches('.')
                    ))
                })
                .collect();
            o.remove("oneOf");
            o.insert("type".into(), kind);
            o.insert(
                "enum".into(),
                Value::Array(consts.into_iter().map(|(c, _)| c).collect()),
            );
            if !said.is_empty() {
                let text = match o.get("description").and_then(Value::as_str) {
                    Some(d) => format!("{d} {}.", said.join("; ")),
                    None => format!("{}.", said.join("; ")),
                };
                o.insert("description".into(), Value::String(text));
            }
        }
    }
    if let Some(Value::String(d)) = o.get_mut("description") {
        if d.contains('\n') {
            *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
        }
    }
    for (k, v) in o.iter_mut() {
        match (k.as_str(), v) {
            // Maps of names to schemas: each value is a schema, the keys are names.
            ("properties" | "$defs" | "definitions", Value::Object(named)) => {
                named.values_mut().for_each(compact)
            }
            (_, v) => compact(v),
        }
    }
}

/// The properties of a schema (nested ones and those of its `$defs` included) that
/// have no description, as `path.to.name`: what a model would have to guess.
pub fn undescribed(schema: &Value) -> Vec<String> {
    fn walk(path: &str, v: &Value, out: &mut Vec<String>) {
        let Some(o) = v.as_object() else { return };
        if let Some(Value::Object(props)) = o.get("properties") {
            for (name, p) in props {
                if p.get("description").is_none() {
                    out.push(format!("{path}{name}"));
                }
                walk(&format!("{path}{name}."), p, out);
            }
        }
        if let Some(item) = o.get("items") {
            walk(path, item, out);
        }
        if let Some(Value::Object(defs)) = o.get("$defs") {
            for (name, d) in defs {
                walk(&format!("{name}."), d, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", schema, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_compact_schema_keeps_what_a_model_needs() {
        let mut s = json!({
            "$schema": "x", "title": "T", "type": "object",
            "$defs": {"K": {"description": "What a K is.", "enum": ["x"], "type": "string"}},
            "properties": {
                "title": {"type": "string", "description": "A property named title.\nKept."},
                "cwd": {"type": ["string", "null"], "default": null, "description": "Where."},
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "kind": {"anyOf": [{"$ref": "#/$defs/K"}, {"type": "null"}], "description": "Which."},
                "status": {"oneOf": [
                    {"const": "a", "type": "string", "description": "first"},
                    {"const": "b", "type": "string", "description": "second"}]}
            }
        });
        compact_schema(&mut s);
        assert_eq!(
            s,
            json!({"type": "object", "$defs": {"K": {"enum": ["x"], "type": "string"}}, "properties": {
                "title": {"type": "string", "description": "A property named title. Kept."},
                "cwd": {"type": "string", "description": "Where."},
                "n": {"type": "integer"},
                "kind": {"$ref": "#/$defs/K", "description": "Which."},
                "status": {"type": "string", "enum": ["a", "b"], "description": "`a`: first; `b`: second."}
            }})
        );
    }
}
