//! What schemas cost to check, as [`schema_cost`](crate::schema_cost) counts it.

use serde_json::{Value, json};

use crate::schema_cost::{CostError, cost, depth_over, size_up_to};

/// Level `i` of `levels` is `allOf` of two `$ref`s to level `i + 1`: 2^levels
/// subschemas once the refs are followed.
pub(crate) fn doubling(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/l{}", i + 1);
        defs.insert(
            format!("l{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("l{levels}"), json!({"type": "string"}));
    json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/l0"}},
        "$defs": defs,
    })
}

/// Subschemas per path and whether arguments are held to a depth, or the refusal.
type Expected = Result<(u64, bool), CostError>;

#[test]
fn costs_of_schemas() {
    let tree = json!({
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}, "name": {"type": "string"}}
    });
    let any_json = json!({
        "type": "object",
        "properties": {"value": {"$ref": "#/$defs/json"}},
        "$defs": {"json": {"anyOf": [
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}},
            {"type": "array", "items": {"$ref": "#/$defs/json"}},
            {"type": ["string", "number", "boolean", "null"]}
        ]}}
    });
    let two_properties_tree = json!({
        "type": "object",
        "properties": {"left": {"$ref": "#"}, "right": {"$ref": "#"}}
    });
    let cases: Vec<(&str, Value, Expected)> = vec![
        (
            "flat",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            Ok((2, false)),
        ),
        ("boolean", json!(true), Ok((1, false))),
        (
            "a DAG reuses one definition",
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/s"}, "b": {"$ref": "#/$defs/s"}},
                "$defs": {"s": {"allOf": [{"type": "string"}, {"minLength": 1}]}}
            }),
            // root, then along a or b: the ref, its target and the target's two.
            Ok((5, false)),
        ),
        (
            "anchors",
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#leaf"}},
                "$defs": {"x": {"$anchor": "leaf", "type": "string"}}
            }),
            Ok((3, false)),
        ),
        (
            "percent-escaped pointer",
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/a%20b"}},
                "$defs": {"a b": {"type": "string"}}
            }),
            Ok((3, false)),
        ),
        (
            "a recursive tree is linear in its depth",
            tree,
            Ok((1 + 64 / 2 * 3, true)),
        ),
        (
            "any JSON value, recursive through objects and arrays",
            any_json,
            Ok((0, true)),
        ),
        (
            "a tree with two recursive properties",
            two_properties_tree,
            Ok((129, true)),
        ),
        (
            "a non-descending cycle",
            json!({
                "type": "object",
                "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
                "properties": {"x": {"$ref": "#/$defs/a"}}
            }),
            Err(CostError::Cycle {
                at: "#/$defs/b".into(),
            }),
        ),
        (
            "a self reference",
            json!({"type": "object", "allOf": [{"$ref": "#"}]}),
            Err(CostError::Cycle { at: "#".into() }),
        ),
        (
            "exponential, 40 levels",
            doubling(40),
            Err(CostError::TooLarge),
        ),
        (
            "exponential, 21 levels",
            doubling(21),
            Err(CostError::TooLarge),
        ),
        (
            "exponential, 14 levels: just under the limit",
            doubling(14),
            Ok(((1 << 16) - 1, false)),
        ),
        (
            "exponential, 15 levels: just over",
            doubling(15),
            Err(CostError::TooLarge),
        ),
        (
            "exponential but small, 10 levels",
            doubling(10),
            Ok(((1 << 12) - 1, false)),
        ),
        (
            "a recursion that doubles per level",
            json!({"type": "object", "properties": {"a": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}}}),
            Err(CostError::TooLarge),
        ),
        (
            "a remote ref",
            json!({"type": "object", "$ref": "https://example.com/s.json"}),
            Err(CostError::Unresolved("https://example.com/s.json".into())),
        ),
        (
            "a missing definition",
            json!({"type": "object", "$ref": "#/$defs/nope"}),
            Err(CostError::Unresolved("#/$defs/nope".into())),
        ),
        (
            "the root's own $id",
            json!({
                "$id": "https://example.com/s.json",
                "type": "object",
                "properties": {"a": {"$ref": "https://example.com/s.json#/$defs/a"}},
                "$defs": {"a": {"type": "string"}}
            }),
            Ok((3, false)),
        ),
    ];
    for (name, schema, expected) in cases {
        let got = cost(&schema).map(|c| (c.per_node, c.depth_bound));
        match (&got, &expected) {
            // The exact count of a recursive schema matters less than its bound.
            (Ok((n, true)), Ok((0, true))) => assert!(*n < 1_000, "{name}: {got:?}"),
            _ => assert_eq!(got, expected, "{name}"),
        }
    }
}

#[test]
fn a_long_ref_chain_is_refused_without_exhausting_the_stack() {
    const LONG: usize = 5_000;
    let mut defs = serde_json::Map::new();
    for i in 0..LONG {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert(format!("d{LONG}"), json!({"type": "string"}));
    let schema = json!({"type": "object", "$ref": "#/$defs/d0", "$defs": defs});
    assert_eq!(cost(&schema), Err(CostError::TooDeep));
}

#[test]
fn depth_and_size_of_arguments() {
    assert!(!depth_over(&json!(1), 0));
    assert!(!depth_over(&json!({}), 0));
    assert!(depth_over(&json!({"a": 1}), 0));
    assert!(!depth_over(&json!({"a": [1]}), 2));
    assert!(depth_over(&json!({"a": [[1]]}), 2));
    assert_eq!(size_up_to(&json!({"a": [1, 2]}), 100), 4);
    assert_eq!(size_up_to(&json!([1, 2, 3, 4, 5]), 3), 3);
}

#[test]
fn the_error_names_the_limit() {
    let message = CostError::TooLarge.to_string();
    assert!(message.contains("more than 100000 subschemas"), "{message}");
    assert!(message.contains("(limit 100000)"), "{message}");
}
