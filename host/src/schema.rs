//! Input schemas: checked to be object schemas once, then used to check every call.

use serde_json::Value;

use crate::ToolError;

/// A tool's input schema, compiled once.
pub(crate) struct InputSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputSchema")
    }
}

impl InputSchema {
    /// Compiles `schema`, which must be a JSON Schema for an object
    /// (`{"type": "object", ...}`), as the seed requires of every tool.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
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
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("the input schema is not a valid JSON Schema: {e}"))?;
        Ok(Self { validator })
    }

    /// Checks one call's arguments; every violation is listed in the input error.
    pub(crate) fn check(&self, args: &Value) -> Result<(), ToolError> {
        let problems: Vec<String> = self
            .validator
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
}
