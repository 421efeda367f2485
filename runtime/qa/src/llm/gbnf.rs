//! JSON schema → GBNF grammar, for constrained decoding by llama.cpp: the
//! small subset of JSON schema the planner and arbitrator ask for (objects
//! of strings, string enums and arrays of strings). Kept apart from the
//! llama.cpp binding so that it builds and is tested without it.

use std::fmt;

use serde_json::{Map, Value};

use super::LlmError;

/// The longest string a schema string gets without `maxLength`.
const DEFAULT_MAX_STRING_CHARS: u64 = 512;
/// The most items an array gets without `maxItems`.
const DEFAULT_MAX_ITEMS: u64 = 32;
/// Upper bounds on what a schema may ask for (keeps the grammar small).
const LIMIT_STRING_CHARS: u64 = 4096;
const LIMIT_ITEMS: u64 = 256;

/// Keywords that only annotate a schema: accepted and ignored.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "examples",
    "default",
    "$schema",
    "$id",
    "$comment",
];

/// The shared rules of every grammar: optional single spaces, and the
/// characters of a JSON string. Raw control characters are excluded, and of
/// the escapes only `\"`, `\\` and `\/` are allowed, so the decoded string has
/// no control characters either.
const COMMON_RULES: &str = r#"ws ::= " "?
char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/]
"#;

fn schema_error(message: impl fmt::Display) -> LlmError {
    LlmError::Local(format!(
        "JSON schema not supported by the local model: {message}"
    ))
}

/// A GBNF string literal (in double quotes) matching exactly `s`.
fn gbnf_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF literal matching `s` written as a JSON string.
fn gbnf_json_string_literal(s: &str) -> Result<String, LlmError> {
    let json = serde_json::to_string(s).map_err(|e| schema_error(format!("{s:?}: {e}")))?;
    Ok(gbnf_literal(&json))
}

fn check_keywords(
    what: &str,
    schema: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), LlmError> {
    for key in schema.keys() {
        if !allowed.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
            return Err(schema_error(format!(
                "{what}: keyword {key:?} is not supported"
            )));
        }
    }
    Ok(())
}

/// The non-negative integer `schema[key]`, or `default` when absent.
fn bound(
    what: &str,
    schema: &Map<String, Value>,
    key: &str,
    default: u64,
    limit: u64,
) -> Result<u64, LlmError> {
    match schema.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n <= limit => Ok(n),
            Some(n) => Err(schema_error(format!(
                "{what}: {key} = {n} is over the limit of {limit}"
            ))),
            None => Err(schema_error(format!(
                "{what}: {key} must be a non-negative integer, not {v}"
            ))),
        },
    }
}

fn type_name(schema: &Map<String, Value>) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

/// The GBNF expression for a string schema (`type: string`, optionally with
/// `enum`, `minLength`, `maxLength`).
fn string_expr(what: &str, schema: &Map<String, Value>) -> Result<String, LlmError> {
    check_keywords(what, schema, &["type", "enum", "minLength", "maxLength"])?;
    match schema.get("type") {
        None if schema.contains_key("enum") => {}
        Some(Value::String(t)) if t == "string" => {}
        Some(t) => {
            return Err(schema_error(format!(
                "{what}: type {t} is not supported here (string expected)"
            )))
        }
        None => return Err(schema_error(format!("{what}: no type"))),
    }
    if let Some(values) = schema.get("enum") {
        let values = values
            .as_array()
            .ok_or_else(|| schema_error(format!("{what}: enum must be an array")))?;
        if values.is_empty() {
            return Err(schema_error(format!("{what}: enum is empty")));
        }
        let mut alternatives = Vec::with_capacity(values.len());
        for v in values {
            let s = v
                .as_str()
                .ok_or_else(|| schema_error(format!("{what}: enum value {v} is not a string")))?;
            alternatives.push(gbnf_json_string_literal(s)?);
        }
        return Ok(format!("( {} )", alternatives.join(" | ")));
    }
    let min = bound(what, schema, "minLength", 0, LIMIT_STRING_CHARS)?;
    let max = bound(
        what,
        schema,
        "maxLength",
        DEFAULT_MAX_STRING_CHARS.max(min),
        LIMIT_STRING_CHARS,
    )?;
    if min > max {
        return Err(schema_error(format!(
            "{what}: minLength {min} is over maxLength {max}"
        )));
    }
    if max == 0 {
        return Ok(r#""\"\"""#.to_string());
    }
    Ok(format!(r#""\"" char{{{min},{max}}} "\"""#))
}

/// The GBNF expression for an array of strings, with `item` the rule name of
/// one item.
fn array_expr(what: &str, schema: &Map<String, Value>, item: &str) -> Result<String, LlmError> {
    check_keywords(what, schema, &["type", "items", "minItems", "maxItems"])?;
    let min = bound(what, schema, "minItems", 0, LIMIT_ITEMS)?;
    let max = bound(
        what,
        schema,
        "maxItems",
        DEFAULT_MAX_ITEMS.max(min),
        LIMIT_ITEMS,
    )?;
    if min > max {
        return Err(schema_error(format!(
            "{what}: minItems {min} is over maxItems {max}"
        )));
    }
    let more = format!(r#"( ws "," ws {item} )"#);
    Ok(match (min, max) {
        (_, 0) => r#""[" ws "]""#.to_string(),
        (0, 1) => format!(r#""[" ws {item}? ws "]""#),
        (0, max) => format!(r#""[" ws ( {item} {more}{{0,{}}} )? ws "]""#, max - 1),
        (_, 1) => format!(r#""[" ws {item} ws "]""#),
        (min, max) => format!(r#""[" ws {item} {more}{{{},{}}} ws "]""#, min - 1, max - 1),
    })
}

/// A GBNF grammar (root rule `root`) for the JSON values matching `schema`.
///
/// Supported: an object (`type: object`) with `properties`, each a `string`
/// (optionally with `enum`, `minLength`, `maxLength`) or an `array` of such
/// strings (optionally with `minItems`, `maxItems`); `required` and
/// `additionalProperties`. The object has exactly the listed properties, all
/// of them present, in the order of `required` (then any property `required`
/// leaves out, by name: serde_json does not keep the order of `properties`). Strings are at most 512 characters
/// and arrays at most 32 items unless the schema says otherwise; JSON
/// whitespace is at most one space.
pub fn json_schema_to_gbnf(schema: &Value) -> Result<String, LlmError> {
    let root = schema
        .as_object()
        .ok_or_else(|| schema_error("the schema is not a JSON object"))?;
    check_keywords(
        "the schema",
        root,
        &["type", "properties", "required", "additionalProperties"],
    )?;
    if type_name(root) != Some("object") {
        return Err(schema_error(format!(
            "the top level must be type \"object\", not {}",
            root.get("type")
                .map_or_else(|| "missing".to_string(), Value::to_string)
        )));
    }
    let empty = Map::new();
    let properties = match root.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err(schema_error(format!(
                "properties must be an object, not {other}"
            )))
        }
    };
    // The order of the properties: serde_json's maps are sorted by key (no
    // `preserve_order`), so the listed order is taken from `required`, then
    // any property it leaves out follows in key order.
    let mut order: Vec<&str> = Vec::with_capacity(properties.len());
    match root.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                let name = name.as_str().ok_or_else(|| {
                    schema_error(format!("required entry {name} is not a string"))
                })?;
                if !properties.contains_key(name) {
                    return Err(schema_error(format!(
                        "required property {name:?} is not in properties"
                    )));
                }
                if order.contains(&name) {
                    return Err(schema_error(format!(
                        "required property {name:?} is listed twice"
                    )));
                }
                order.push(name);
            }
        }
        Some(other) => {
            return Err(schema_error(format!(
                "required must be an array, not {other}"
            )))
        }
    }
    for name in properties.keys() {
        if !order.contains(&name.as_str()) {
            order.push(name);
        }
    }
    match root.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => {
            return Err(schema_error(format!(
                "additionalProperties must be true or false, not {other}"
            )))
        }
    }

    let mut rules = Vec::new();
    let mut members = Vec::with_capacity(properties.len());
    for (i, name) in order.into_iter().enumerate() {
        let what = format!("property {name:?}");
        let prop = properties
            .get(name)
            .ok_or_else(|| schema_error(format!("{what}: no schema")))?
            .as_object()
            .ok_or_else(|| schema_error(format!("{what}: its schema is not an object")))?;
        let rule = format!("prop-{i}");
        let expr = match type_name(prop) {
            Some("array") => {
                let items = prop
                    .get("items")
                    .ok_or_else(|| schema_error(format!("{what}: an array needs items")))?
                    .as_object()
                    .ok_or_else(|| schema_error(format!("{what}: items is not an object")))?;
                let item_rule = format!("{rule}-item");
                rules.push(format!(
                    "{item_rule} ::= {}",
                    string_expr(&format!("{what} items"), items)?
                ));
                array_expr(&what, prop, &item_rule)?
            }
            _ => string_expr(&what, prop)?,
        };
        rules.push(format!("{rule} ::= {expr}"));
        members.push(format!(
            r#"{} ws ":" ws {rule}"#,
            gbnf_json_string_literal(name)?
        ));
    }

    let body = if members.is_empty() {
        r#""{" ws "}""#.to_string()
    } else {
        format!(r#""{{" ws {} ws "}}""#, members.join(r#" ws "," ws "#))
    };
    let mut grammar = format!("root ::= {body}\n");
    for rule in rules {
        grammar.push_str(&rule);
        grammar.push('\n');
    }
    grammar.push_str(COMMON_RULES);
    Ok(grammar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gbnf_for_one_string() {
        let schema = json!({
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": false
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        assert!(
            g.starts_with(r#"root ::= "{" ws "\"query\"" ws ":" ws prop-0 ws "}""#),
            "{g}"
        );
        assert!(g.contains(r#"prop-0 ::= "\"" char{0,512} "\"""#), "{g}");
        assert!(g.contains("char ::= "), "{g}");
        assert!(g.contains("ws ::= "), "{g}");
    }

    #[test]
    fn gbnf_for_array_of_strings_and_enum_in_order() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["a", "b\"c"]},
                "name": {"type": "string", "maxLength": 40}
            },
            "required": ["tags", "kind", "name"],
            "additionalProperties": false
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        let root = g.lines().next().unwrap();
        let tags = root.find(r#""\"tags\"""#).unwrap();
        let kind = root.find(r#""\"kind\"""#).unwrap();
        let name = root.find(r#""\"name\"""#).unwrap();
        assert!(tags < kind && kind < name, "{root}");
        assert!(
            g.contains(r#"prop-0-item ::= "\"" char{0,512} "\"""#),
            "{g}"
        );
        assert!(
            g.contains(
                r#"prop-0 ::= "[" ws ( prop-0-item ( ws "," ws prop-0-item ){0,31} )? ws "]""#
            ),
            "{g}"
        );
        assert!(
            g.contains(r#"prop-1 ::= ( "\"a\"" | "\"b\\\"c\"" )"#),
            "{g}"
        );
        assert!(g.contains(r#"prop-2 ::= "\"" char{0,40} "\"""#), "{g}");
    }

    #[test]
    fn gbnf_properties_outside_required_follow_by_name() {
        let schema = json!({
            "type": "object",
            "properties": {"b": {"type": "string"}, "c": {"type": "string"}, "a": {"type": "string"}},
            "required": ["c"]
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        let root = g.lines().next().unwrap();
        assert_eq!(
            root,
            r#"root ::= "{" ws "\"c\"" ws ":" ws prop-0 ws "," ws "\"a\"" ws ":" ws prop-1 ws "," ws "\"b\"" ws ":" ws prop-2 ws "}""#
        );
        let empty = json_schema_to_gbnf(&json!({"type": "object"})).unwrap();
        assert!(empty.starts_with(r#"root ::= "{" ws "}""#), "{empty}");
    }

    #[test]
    fn gbnf_array_bounds() {
        let schema = json!({
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}}
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        assert!(
            g.contains(r#"prop-0 ::= "[" ws prop-0-item ( ws "," ws prop-0-item ){0,2} ws "]""#),
            "{g}"
        );
    }

    #[test]
    fn gbnf_rejects_unsupported_schemas() {
        for schema in [
            json!("string"),
            json!({"type": "array"}),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "pattern": "x"}}}),
            json!({"type": "object", "properties": {"n": {"type": "array"}}}),
            json!({"type": "object", "properties": {"n": {"type": "array", "items": {"type": "number"}}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "enum": [1]}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "enum": []}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "maxLength": -1}}}),
            json!({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["m"]}),
            json!({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n", "n"]}),
            json!({"type": "object", "properties": {}, "additionalProperties": {}}),
        ] {
            match json_schema_to_gbnf(&schema) {
                Err(LlmError::Local(m)) => assert!(m.contains("JSON schema"), "{m}"),
                other => panic!("{schema}: {other:?}"),
            }
        }
    }

    #[test]
    fn gbnf_literals_are_escaped() {
        assert_eq!(gbnf_literal("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(gbnf_json_string_literal("q").unwrap(), r#""\"q\"""#);
    }
}
