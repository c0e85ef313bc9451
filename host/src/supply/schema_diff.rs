//! A tool's input schema in short, and what changed between two of them: the
//! top-level properties a model fills in (added, removed, of another type, changed
//! otherwise) and which are required; anything else as one "other" change.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// The most properties [`summary`] names before `+N more`.
const SHOWN_PROPERTIES: usize = 8;

/// One difference between two input schemas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum SchemaChange {
    /// A property the old schema did not have, and its type.
    Added {
        /// The property.
        name: String,
        /// Its type in short (`string`, `integer|null`).
        ty: String,
    },
    /// A property the new schema no longer has.
    Removed {
        /// The property.
        name: String,
        /// Its old type in short.
        ty: String,
    },
    /// A property whose type changed.
    Retyped {
        /// The property.
        name: String,
        /// The old type in short.
        old: String,
        /// The new type in short.
        new: String,
    },
    /// A property of the same type whose schema changed otherwise (its
    /// description, format, bounds, enum...).
    Changed {
        /// The property.
        name: String,
    },
    /// A property that is now required.
    NowRequired {
        /// The property.
        name: String,
    },
    /// A property that is no longer required.
    NoLongerRequired {
        /// The property.
        name: String,
    },
    /// Something outside the properties and `required` changed
    /// (`additionalProperties`, definitions...).
    Other,
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |name: &str| shown_name(name);
        match self {
            Self::Added { name, ty } => write!(f, "+ {}: {ty}", shown(name)),
            Self::Removed { name, ty } => write!(f, "- {}: {ty}", shown(name)),
            Self::Retyped { name, old, new } => write!(f, "{}: {old} → {new}", shown(name)),
            Self::Changed { name } => write!(f, "{} changed", shown(name)),
            Self::NowRequired { name } => write!(f, "{} now required", shown(name)),
            Self::NoLongerRequired { name } => write!(f, "{} now optional", shown(name)),
            Self::Other => f.write_str("other keywords changed"),
        }
    }
}

/// What changed from the schema `old` to `new`; empty when they are equal.
pub fn diff(old: &Value, new: &Value) -> Vec<SchemaChange> {
    if old == new {
        return Vec::new();
    }
    let empty = Map::new();
    let (old_props, new_props) = (
        properties(old).unwrap_or(&empty),
        properties(new).unwrap_or(&empty),
    );
    let mut changes = Vec::new();
    for (name, schema) in sorted(new_props) {
        match old_props.get(name) {
            None => changes.push(SchemaChange::Added {
                name: name.clone(),
                ty: type_of(schema),
            }),
            Some(before) if before == schema => {}
            Some(before) => {
                let (old_ty, new_ty) = (type_of(before), type_of(schema));
                changes.push(if old_ty == new_ty {
                    SchemaChange::Changed { name: name.clone() }
                } else {
                    SchemaChange::Retyped {
                        name: name.clone(),
                        old: old_ty,
                        new: new_ty,
                    }
                });
            }
        }
    }
    for (name, schema) in sorted(old_props) {
        if !new_props.contains_key(name) {
            changes.push(SchemaChange::Removed {
                name: name.clone(),
                ty: type_of(schema),
            });
        }
    }
    let (old_req, new_req) = (required(old), required(new));
    for name in new_req.difference(&old_req) {
        changes.push(SchemaChange::NowRequired {
            name: (*name).to_owned(),
        });
    }
    for name in old_req.difference(&new_req) {
        changes.push(SchemaChange::NoLongerRequired {
            name: (*name).to_owned(),
        });
    }
    if rest(old) != rest(new) {
        changes.push(SchemaChange::Other);
    }
    changes
}

/// The schema in one line: `word: string (required), lang: string|null`, at most
/// a few properties; `no arguments` for none.
pub fn summary(schema: &Value) -> String {
    let Some(props) = properties(schema) else {
        return "no arguments".to_owned();
    };
    if props.is_empty() {
        return "no arguments".to_owned();
    }
    let required = required(schema);
    let mut parts: Vec<String> = sorted(props)
        .take(SHOWN_PROPERTIES)
        .map(|(name, prop)| {
            let ty = type_of(prop);
            let required = required.contains(name.as_str());
            let name = shown_name(name);
            if required {
                format!("{name}: {ty} (required)")
            } else {
                format!("{name}: {ty}")
            }
        })
        .collect();
    if props.len() > SHOWN_PROPERTIES {
        parts.push(format!("+{} more", props.len() - SHOWN_PROPERTIES));
    }
    parts.join(", ")
}

/// A property's name as shown: escaped, cut short.
fn shown_name(name: &str) -> String {
    let escaped = crate::term::escape(name, false);
    crate::term::cut_end(&escaped, TYPE_SHOWN).into_owned()
}

/// A map's entries by key, whether or not serde_json keeps insertion order.
fn sorted(map: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    map.iter()
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties")?.as_object()
}

fn required(schema: &Value) -> BTreeSet<&str> {
    (schema.get("required").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The schema but its properties and `required`.
fn rest(schema: &Value) -> Option<Map<String, Value>> {
    let mut map = schema.as_object()?.clone();
    map.remove("properties");
    map.remove("required");
    Some(map)
}

/// A property's type in short: `string`, `integer|null` for a list of types, the
/// last part of a `$ref`, `enum`, `anyOf`/`oneOf` of the alternatives' types (one
/// level deep), else `any`; at most a few alternatives, each cut short. Guest text:
/// control characters escaped.
fn type_of(schema: &Value) -> String {
    type_at(schema, 0)
}

/// The longest a type (or a `$ref`'s name) is shown.
const TYPE_SHOWN: usize = 40;

fn type_at(schema: &Value, depth: usize) -> String {
    let join = |parts: Vec<String>| parts.join("|");
    let ty = match schema.get("type") {
        Some(Value::String(ty)) => ty.clone(),
        Some(Value::Array(types)) => join(
            types
                .iter()
                .take(SHOWN_PROPERTIES)
                .map(|t| t.as_str().unwrap_or("?").to_owned())
                .collect(),
        ),
        _ => {
            let alternatives = (schema.get("anyOf"))
                .or_else(|| schema.get("oneOf"))
                .and_then(Value::as_array);
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                reference.rsplit('/').next().unwrap_or(reference).to_owned()
            } else if schema.get("enum").is_some() {
                "enum".to_owned()
            } else if let Some(alternatives) = alternatives
                && depth == 0
            {
                join(
                    alternatives
                        .iter()
                        .take(SHOWN_PROPERTIES)
                        .map(|a| type_at(a, depth + 1))
                        .collect(),
                )
            } else {
                "any".to_owned()
            }
        }
    };
    let ty = crate::term::escape(&ty, false);
    crate::term::cut_end(&ty, TYPE_SHOWN * SHOWN_PROPERTIES).into_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(props: Value, required: &[&str]) -> Value {
        json!({"type": "object", "properties": props, "required": required})
    }

    #[test]
    fn equal_schemas_have_no_change() {
        let s = schema(json!({"a": {"type": "string"}}), &["a"]);
        assert_eq!(diff(&s, &s.clone()), []);
    }

    #[test]
    fn every_kind_of_change_is_named() {
        let old = schema(
            json!({
                "gone": {"type": "string"},
                "n": {"type": "integer"},
                "s": {"type": "string", "description": "old"},
                "r": {"type": "boolean"},
            }),
            &["gone", "r"],
        );
        let mut new = schema(
            json!({
                "n": {"type": ["string", "null"]},
                "s": {"type": "string", "description": "new"},
                "r": {"type": "boolean"},
                "fresh": {"$ref": "#/$defs/Lang"},
            }),
            &["n"],
        );
        new["additionalProperties"] = json!(false);
        let name = |n: &str| n.to_owned();
        assert_eq!(
            diff(&old, &new),
            [
                SchemaChange::Added {
                    name: name("fresh"),
                    ty: name("Lang")
                },
                SchemaChange::Retyped {
                    name: name("n"),
                    old: name("integer"),
                    new: name("string|null")
                },
                SchemaChange::Changed { name: name("s") },
                SchemaChange::Removed {
                    name: name("gone"),
                    ty: name("string")
                },
                SchemaChange::NowRequired { name: name("n") },
                SchemaChange::NoLongerRequired { name: name("gone") },
                SchemaChange::NoLongerRequired { name: name("r") },
                SchemaChange::Other,
            ]
        );
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_does_not_panic() {
        for (old, new) in [
            (json!(null), json!({"properties": 3})),
            (
                json!([1, 2]),
                json!({"properties": {"a": 7}, "required": [1, null]}),
            ),
        ] {
            let _ = diff(&old, &new);
            let _ = summary(&new);
        }
        assert_eq!(summary(&json!({"properties": {"a": 7}})), "a: any");
        let nested = json!({"properties": {"a": {"anyOf": [
            {"type": "string"}, {"$ref": "#/$defs/B"}, {"anyOf": [{"type": "null"}]}
        ]}}});
        assert_eq!(summary(&nested), "a: string|B|any");
    }

    #[test]
    fn the_summary_names_types_and_required_and_escapes_names() {
        let s = schema(
            json!({"word": {"type": "string"}, "lang\u{1b}[2J": {"type": ["string", "null"]}}),
            &["word"],
        );
        assert_eq!(
            summary(&s),
            "lang\\e[2J: string|null, word: string (required)"
        );
        assert_eq!(summary(&schema(json!({}), &[])), "no arguments");
    }
}
