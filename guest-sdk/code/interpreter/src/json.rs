//! Values across the boundary: a program's values as JSON (a tool's arguments, the
//! run's result, by the seed's rules: what `json.dumps` takes), and a tool's result
//! as a program's value.

use std::fmt::Write as _;

use monty_types::{DictPairs, MontyObject};
use num_bigint::BigInt;

use crate::bindings::piton::tool::types::Content;

/// How deep a value may nest to become JSON (the component's stack is small).
const MAX_DEPTH: usize = 200;

/// `value` as JSON text, or what in it cannot be JSON.
pub(crate) fn to_json(value: &MontyObject) -> Result<String, String> {
    let mut out = String::new();
    write_json(value, &mut out, 0)?;
    Ok(out)
}

fn write_json(value: &MontyObject, out: &mut String, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
    }
    match value {
        MontyObject::None => out.push_str("null"),
        MontyObject::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        MontyObject::Int(n) => {
            let _ = write!(out, "{n}");
        }
        MontyObject::BigInt(n) => {
            let _ = write!(out, "{n}");
        }
        MontyObject::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(number) => {
                let _ = write!(out, "{number}");
            }
            None => return Err(format!("the float {f} is not a JSON number")),
        },
        MontyObject::String(s) => push_string(s, out),
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::NamedTuple { values: items, .. } => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out, depth + 1)?;
            }
            out.push(']');
        }
        MontyObject::Dict(pairs) => {
            out.push('{');
            for (i, (key, item)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(&key_text(key)?, out);
                out.push(':');
                write_json(item, out, depth + 1)?;
            }
            out.push('}');
        }
        MontyObject::Cycle(_, placeholder) => {
            return Err(format!("it contains itself ({placeholder})"));
        }
        other => {
            return Err(format!(
                "an object of type {} is not JSON serializable",
                other.type_name()
            ));
        }
    }
    Ok(())
}

/// A dict key as `json.dumps` writes it: a str as is; an int, float, bool or None
/// as its JSON text.
fn key_text(key: &MontyObject) -> Result<String, String> {
    Ok(match key {
        MontyObject::String(s) => s.clone(),
        MontyObject::Int(_)
        | MontyObject::BigInt(_)
        | MontyObject::Float(_)
        | MontyObject::Bool(_)
        | MontyObject::None => to_json(key)?,
        other => {
            return Err(format!(
                "keys must be str, int, float, bool or None, not {}",
                other.type_name()
            ));
        }
    })
}

fn push_string(s: &str, out: &mut String) {
    // serde_json escapes as JSON requires; writing a str cannot fail.
    if let Ok(text) = serde_json::to_string(s) {
        out.push_str(&text);
    }
}

/// A JSON document as the program's value: objects become dicts, arrays lists.
pub(crate) fn from_json(text: &str) -> Result<MontyObject, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("the tool returned JSON that does not parse: {e}"))?;
    Ok(from_value(value))
}

fn from_value(value: serde_json::Value) -> MontyObject {
    use serde_json::Value;
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::Int(i)
            } else if let Some(u) = n.as_u64() {
                MontyObject::BigInt(BigInt::from(u))
            } else {
                MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::String(s),
        Value::Array(items) => MontyObject::List(items.into_iter().map(from_value).collect()),
        Value::Object(map) => MontyObject::Dict(DictPairs::from(
            map.into_iter()
                .map(|(k, v)| (MontyObject::String(k), from_value(v)))
                .collect::<Vec<_>>(),
        )),
    }
}

/// A tool's result as the program's value: nothing is None, one block is its
/// value (text a str, JSON its value, an image a dict describing it), several a
/// list of theirs.
pub(crate) fn content_value(content: Vec<Content>) -> Result<MontyObject, String> {
    let mut values = content
        .into_iter()
        .map(block_value)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match values.len() {
        0 => MontyObject::None,
        1 => values.remove(0),
        _ => MontyObject::List(values),
    })
}

fn block_value(block: Content) -> Result<MontyObject, String> {
    Ok(match block {
        Content::Text(text) => MontyObject::String(text),
        Content::Json(text) => from_json(&text)?,
        Content::Image(image) => MontyObject::Dict(DictPairs::from(vec![
            (
                MontyObject::String("type".into()),
                MontyObject::String("image".into()),
            ),
            (
                MontyObject::String("mime_type".into()),
                MontyObject::String(image.mime_type),
            ),
            (
                MontyObject::String("bytes".into()),
                MontyObject::Int(i64::try_from(image.data.len()).unwrap_or(i64::MAX)),
            ),
        ])),
    })
}

/// A call's arguments as a JSON object: positional ones bind to `params` in order,
/// keyword ones by name.
pub(crate) fn arguments(
    function: &str,
    params: &[String],
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Result<String, String> {
    if args.len() > params.len() {
        return Err(format!(
            "{function}() takes {} positional argument{} but {} were given",
            params.len(),
            if params.len() == 1 { "" } else { "s" },
            args.len()
        ));
    }
    let mut pairs: Vec<(String, &MontyObject)> = params
        .iter()
        .zip(args)
        .map(|(name, value)| (name.clone(), value))
        .collect();
    for (key, value) in kwargs {
        let MontyObject::String(key) = key else {
            return Err(format!("{function}() keywords must be strings"));
        };
        if pairs.iter().any(|(name, _)| name == key) {
            return Err(format!(
                "{function}() got multiple values for argument '{key}'"
            ));
        }
        pairs.push((key.clone(), value));
    }
    let mut out = String::from("{");
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_string(name, &mut out);
        out.push(':');
        write_json(value, &mut out, 1)
            .map_err(|why| format!("{function}() argument '{name}' cannot be JSON: {why}"))?;
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_json_as_json_dumps_takes_them() {
        let dict = MontyObject::Dict(DictPairs::from(vec![
            (
                MontyObject::Int(1),
                MontyObject::List(vec![MontyObject::None]),
            ),
            (
                MontyObject::String("a\"b".into()),
                MontyObject::Tuple(vec![MontyObject::Float(1.5), MontyObject::Bool(true)]),
            ),
        ]));
        assert_eq!(to_json(&dict).unwrap(), r#"{"1":[null],"a\"b":[1.5,true]}"#);
        assert!(to_json(&MontyObject::Float(f64::NAN)).is_err());
        assert!(
            to_json(&MontyObject::Set(vec![]))
                .unwrap_err()
                .contains("set")
        );
        assert!(to_json(&MontyObject::Bytes(vec![1])).is_err());
    }

    #[test]
    fn json_comes_back_as_values() {
        let value = from_json(r#"{"n": 3, "big": 18446744073709551615, "l": [1.5, "x"]}"#).unwrap();
        // Objects come in the order serde_json keeps them: by key.
        assert_eq!(
            to_json(&value).unwrap(),
            r#"{"big":18446744073709551615,"l":[1.5,"x"],"n":3}"#
        );
    }

    #[test]
    fn arguments_bind_positions_then_keywords() {
        let params = ["text".to_owned(), "limit".to_owned()];
        let made = arguments(
            "f",
            &params,
            &[MontyObject::String("hi".into())],
            &[(MontyObject::String("limit".into()), MontyObject::Int(2))],
        );
        assert_eq!(made.unwrap(), r#"{"text":"hi","limit":2}"#);
        let twice = arguments(
            "f",
            &params,
            &[MontyObject::String("hi".into())],
            &[(MontyObject::String("text".into()), MontyObject::Int(2))],
        );
        assert!(
            twice
                .unwrap_err()
                .contains("multiple values for argument 'text'")
        );
        let many = arguments(
            "f",
            &params,
            &[MontyObject::None, MontyObject::None, MontyObject::None],
            &[],
        );
        assert!(
            many.unwrap_err()
                .contains("takes 2 positional arguments but 3 were given")
        );
    }
}
