//! Input schemas: checked to be object schemas once, then used to check every call.

use serde_json::Value;

use crate::tool::ToolError;

/// A tool's input schema, compiled once.
pub(crate) enum InputSchema {
    /// Every call is checked against the whole schema.
    Whole(Box<jsonschema::Validator>),
    /// Only the required properties are checked; the tool checks the rest (MCP).
    Required(Vec<String>),
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputSchema")
    }
}

/// `schema` as a JSON object whose `"type"` is `"object"`, as the seed requires of
/// every tool's input schema.
fn object_schema(schema: &Value) -> Result<&serde_json::Map<String, Value>, String> {
    let Some(object) = schema.as_object() else {
        return Err(format!(
            "the input schema must be a JSON object, not {schema}"
        ));
    };
    if object.get("type") != Some(&Value::from("object")) {
        return Err(
            "the input schema must describe an object: add \"type\": \"object\"".to_owned(),
        );
    }
    Ok(object)
}

impl InputSchema {
    /// Compiles `schema`, which must be a JSON Schema for an object
    /// (`{"type": "object", ...}`), as the seed requires of every tool.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        object_schema(schema)?;
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("the input schema is not a valid JSON Schema: {e}"))?;
        Ok(Self::Whole(Box::new(validator)))
    }

    /// An object schema of which only `required` is checked: an MCP server's own
    /// schema may use what this host's validator does not know, and the server
    /// checks its arguments itself.
    pub(crate) fn required_only(schema: &Value) -> Result<Self, String> {
        let object = object_schema(schema)?;
        let required = match object.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or("`required` must be a list of property names")?,
            Some(_) => return Err("`required` must be a list of property names".to_owned()),
        };
        Ok(Self::Required(required))
    }

    /// Checks one call's arguments; every violation is listed in the input error.
    pub(crate) fn check(&self, args: &Value) -> Result<(), ToolError> {
        let validator = match self {
            Self::Whole(validator) => validator,
            Self::Required(required) => {
                let missing: Vec<&str> = required
                    .iter()
                    .filter(|name| args.get(name.as_str()).is_none())
                    .map(String::as_str)
                    .collect();
                return match missing.as_slice() {
                    [] => Ok(()),
                    [one] => Err(ToolError::Input(format!("{one:?} is a required property"))),
                    more => Err(ToolError::Input(format!(
                        "{} are required properties",
                        more.iter()
                            .map(|m| format!("{m:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                };
            }
        };
        let problems: Vec<String> = validator
            .iter_errors(args)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::Input(problems.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text_schema() -> InputSchema {
        InputSchema::new(&json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"]
        }))
        .unwrap()
    }

    #[test]
    fn only_object_schemas_are_accepted() {
        assert!(InputSchema::new(&json!({"type": "object"})).is_ok());
        let cases = [
            json!("string"),
            json!({"type": "string"}),
            json!({}),
            json!({"type": "object", "properties": 3}),
        ];
        for schema in cases {
            assert!(InputSchema::new(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn valid_args_pass() {
        assert_eq!(text_schema().check(&json!({"text": "a b"})), Ok(()));
    }

    #[test]
    fn every_violation_is_listed_with_its_path() {
        let Err(ToolError::Input(message)) = text_schema().check(&json!({"n": "x"})) else {
            panic!("expected an input error");
        };
        assert!(
            message.contains("\"text\" is a required property"),
            "{message}"
        );
        assert!(message.contains("/n: "), "{message}");
    }

    #[test]
    fn required_only_checks_presence_and_nothing_else() {
        let schema = InputSchema::required_only(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a", "b"]
        }))
        .unwrap();
        assert_eq!(schema.check(&json!({"a": 1, "b": null, "c": 2})), Ok(()));
        assert_eq!(
            schema.check(&json!({"b": 1})),
            Err(ToolError::Input("\"a\" is a required property".into()))
        );
        assert_eq!(
            schema.check(&json!({})),
            Err(ToolError::Input(
                "\"a\", \"b\" are required properties".into()
            ))
        );
        assert!(InputSchema::required_only(&json!({"type": "object", "required": "a"})).is_err());
        assert!(InputSchema::required_only(&json!({"type": "string"})).is_err());
    }
}
