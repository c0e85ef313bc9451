//! Input schemas: checked to be object schemas once, then used to check every call.
//!
//! What a check may cost is bounded when the schema loads ([`schema_cost`]), and
//! what it reports is bounded here: the first [`MAX_SHOWN`] problems, each cut to
//! [`MAX_PROBLEM`] bytes, then how many more (counted up to [`MAX_COUNTED`]), in at
//! most [`MAX_MESSAGE`] bytes.
//!
//! [`schema_cost`]: crate::schema_cost

use serde_json::Value;

use crate::schema_cost::{self, Cost, CostError};
use crate::tool::ToolError;

/// The most problems an input error lists.
pub(crate) const MAX_SHOWN: usize = 8;
/// The most bytes of one problem listed.
const MAX_PROBLEM: usize = 400;
/// The most problems counted (for "and N more"); checking stops there.
const MAX_COUNTED: usize = 1_000;
/// The most bytes of an input error's message.
pub(crate) const MAX_MESSAGE: usize = 4 * 1024;

/// The most subschemas a check may apply in all (subschemas per value times the
/// arguments' values): about a second of checking. Larger arguments are an input
/// error, so that no check runs on much past its call's deadline.
pub(crate) const MAX_WORK: u64 = 100_000_000;

/// Subschemas applied times argument values below which a check runs where it is
/// asked (it takes microseconds); above, the registry runs it on a blocking thread
/// under the tool's deadline.
const QUICK: u64 = 20_000;

/// A tool's input schema, compiled once.
pub(crate) enum InputSchema {
    /// Every call is checked against the whole schema.
    Whole {
        validator: Box<jsonschema::Validator>,
        cost: Cost,
    },
    /// Only the required properties are checked; the tool checks the rest (MCP).
    Required(Vec<String>),
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputSchema")
    }
}

/// An input schema a tool cannot have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Not a JSON object: the schema as JSON text.
    #[error("the input schema must be a JSON object, not {0}")]
    NotAnObject(String),
    /// An object whose `"type"` is not `"object"`.
    #[error("the input schema must describe an object: add \"type\": \"object\"")]
    NotForAnObject,
    /// Checking arguments against it could cost too much.
    #[error(transparent)]
    Cost(#[from] CostError),
    /// Not a valid JSON Schema: the validator's reason.
    #[error("the input schema is not a valid JSON Schema: {0}")]
    Invalid(String),
    /// `required` is not a list of strings.
    #[error("`required` must be a list of property names")]
    Required,
}

/// `schema` as a JSON object whose `"type"` is `"object"`, as the seed requires of
/// every tool's input schema.
fn object_schema(schema: &Value) -> Result<&serde_json::Map<String, Value>, SchemaError> {
    let Some(object) = schema.as_object() else {
        return Err(SchemaError::NotAnObject(schema.to_string()));
    };
    if object.get("type") != Some(&Value::from("object")) {
        return Err(SchemaError::NotForAnObject);
    }
    Ok(object)
}

impl InputSchema {
    /// Compiles `schema`, which must be a JSON Schema for an object
    /// (`{"type": "object", ...}`), as the seed requires of every tool.
    ///
    /// A schema whose check could cost more than [`schema_cost`] allows is refused.
    pub(crate) fn new(schema: &Value) -> Result<Self, SchemaError> {
        object_schema(schema)?;
        // Counted first: compiling follows the same $refs.
        let cost = schema_cost::cost(schema)?;
        let validator =
            jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self::Whole {
            validator: Box::new(validator),
            cost,
        })
    }

    /// Whether checking `args` takes so little that it may run on an async thread.
    pub(crate) fn is_quick(&self, args: &Value) -> bool {
        match self {
            Self::Required(_) => true,
            Self::Whole { cost, .. } => {
                let budget = QUICK / cost.per_node.max(1);
                schema_cost::size_up_to(args, budget.saturating_add(1)) <= budget
            }
        }
    }

    /// An object schema of which only `required` is checked: an MCP server's own
    /// schema may use what this host's validator does not know, and the server
    /// checks its arguments itself.
    pub(crate) fn required_only(schema: &Value) -> Result<Self, SchemaError> {
        let object = object_schema(schema)?;
        let required = match object.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or(SchemaError::Required)?,
            Some(_) => return Err(SchemaError::Required),
        };
        Ok(Self::Required(required))
    }

    /// Checks one call's arguments; the first violations are listed in the input
    /// error, and how many more there are.
    pub(crate) fn check(&self, args: &Value) -> Result<(), ToolError> {
        let validator = match self {
            Self::Whole { validator, cost } => {
                let most = MAX_WORK / cost.per_node.max(1);
                let values = schema_cost::size_up_to(args, most.saturating_add(1));
                if values > most {
                    return Err(ToolError::Input(format!(
                        "the arguments hold more than {most} JSON values, too many to check \
                         against this tool's input schema, which applies up to {} subschemas \
                         to each (at most {MAX_WORK} in all); send fewer values",
                        cost.per_node
                    )));
                }
                if cost.depth_bound && schema_cost::depth_over(args, schema_cost::MAX_DEPTH) {
                    return Err(ToolError::Input(format!(
                        "the arguments nest more than {} levels deep, the most this tool's \
                         recursive input schema is checked to; send them less deeply nested",
                        schema_cost::MAX_DEPTH
                    )));
                }
                validator
            }
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
        if validator.is_valid(args) {
            return Ok(());
        }
        let mut shown = Vec::new();
        let mut counted = 0usize;
        for error in validator.iter_errors(args).take(MAX_COUNTED + 1) {
            counted += 1;
            if shown.len() < MAX_SHOWN {
                let path = error.instance_path().to_string();
                let problem = if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                };
                shown.push(cut(problem, MAX_PROBLEM));
            }
        }
        if shown.is_empty() {
            // `is_valid` and `iter_errors` disagree: say so rather than let it pass.
            shown.push("the arguments do not match the input schema".to_owned());
        }
        let mut message = shown.join("; ");
        let more = counted.saturating_sub(shown.len());
        if counted > MAX_COUNTED {
            message.push_str(&format!(
                "; and more than {} more",
                MAX_COUNTED - shown.len()
            ));
        } else if more > 0 {
            message.push_str(&format!("; and {more} more"));
        }
        Err(ToolError::Input(cut(message, MAX_MESSAGE)))
    }
}

/// `text` cut to at most `max` bytes, on a character boundary, marked with `…`.
fn cut(mut text: String, max: usize) -> String {
    const MARK: &str = "…";
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(MARK);
    text
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

    /// Whether an error is the variant expected.
    type IsError = fn(&SchemaError) -> bool;

    #[test]
    fn only_object_schemas_are_accepted() {
        assert!(InputSchema::new(&json!({"type": "object"})).is_ok());
        let not_for_an_object = |e: &SchemaError| matches!(e, SchemaError::NotForAnObject);
        let cases: [(Value, IsError); 4] = [
            (json!("string"), |e| {
                matches!(e, SchemaError::NotAnObject(_))
            }),
            (json!({"type": "string"}), not_for_an_object),
            (json!({}), not_for_an_object),
            (json!({"type": "object", "properties": 3}), |e| {
                matches!(e, SchemaError::Invalid(_))
            }),
        ];
        for (schema, is) in cases {
            let error = InputSchema::new(&schema).expect_err("refused");
            assert!(is(&error), "{schema}: {error:?}");
        }
        assert_eq!(
            SchemaError::NotAnObject("\"string\"".into()).to_string(),
            "the input schema must be a JSON object, not \"string\""
        );
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
    fn many_violations_are_cut_to_the_first_few_and_a_count() {
        let schema = InputSchema::new(&crate::schema_cost_tests::doubling(14)).unwrap();
        let Err(ToolError::Input(message)) = schema.check(&json!({"a": 1})) else {
            panic!("expected an input error");
        };
        assert!(message.len() <= MAX_MESSAGE, "{} bytes", message.len());
        assert_eq!(
            message.matches("is not of type").count(),
            MAX_SHOWN,
            "{message}"
        );
        assert!(
            message.ends_with(&format!("; and more than {} more", MAX_COUNTED - MAX_SHOWN)),
            "{message}"
        );
        let long = InputSchema::new(&json!({
            "type": "object",
            "properties": {"a": {"const": "x".repeat(100_000)}}
        }))
        .unwrap();
        let Err(ToolError::Input(message)) = long.check(&json!({"a": 1, "b": 2})) else {
            panic!("expected an input error");
        };
        assert!(message.len() <= MAX_PROBLEM, "{} bytes", message.len());
        assert!(message.ends_with('…'), "{message:.100}");
    }

    #[test]
    fn arguments_too_many_to_check_against_a_costly_schema_are_an_input_error() {
        let mut schema = crate::schema_cost_tests::doubling(14);
        schema["properties"]["list"] = json!({"items": {"$ref": "#/$defs/l0"}});
        let schema = InputSchema::new(&schema).unwrap();
        assert!(!schema.is_quick(&json!({})), "2^16 subschemas per value");
        let Err(ToolError::Input(message)) = schema.check(&json!({"list": vec![1; 1_600]})) else {
            panic!("expected an input error");
        };
        assert!(
            message.starts_with("the arguments hold more than 1525 JSON values"),
            "{message}"
        );
        // A cheap schema takes them inline.
        assert!(text_schema().is_quick(&json!({"list": vec![1; 1_600]})));
    }

    #[test]
    fn a_schema_that_costs_too_much_is_refused() {
        let error = InputSchema::new(&crate::schema_cost_tests::doubling(40)).unwrap_err();
        assert_eq!(error, SchemaError::Cost(CostError::TooLarge));
        let shown = error.to_string();
        assert!(shown.contains("(limit 100000)"), "{shown}");
    }

    #[test]
    fn recursive_schemas_take_arguments_as_deep_as_they_are_counted() {
        let tree = InputSchema::new(&json!({
            "type": "object",
            "properties": {"c": {"$ref": "#"}}
        }))
        .unwrap();
        let mut args = json!({});
        for _ in 0..schema_cost::MAX_DEPTH {
            args = json!({"c": args});
        }
        assert_eq!(tree.check(&args), Ok(()));
        let Err(ToolError::Input(message)) = tree.check(&json!({"c": args})) else {
            panic!("expected an input error");
        };
        assert!(message.contains("more than 64 levels deep"), "{message}");
        // A schema that does not recurse takes any depth serde_json parses.
        let flat = InputSchema::new(&json!({"type": "object"})).unwrap();
        assert_eq!(flat.check(&json!({"c": args})), Ok(()));
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
        assert!(matches!(
            InputSchema::required_only(&json!({"type": "object", "required": "a"})),
            Err(SchemaError::Required)
        ));
        assert!(matches!(
            InputSchema::required_only(&json!({"type": "string"})),
            Err(SchemaError::NotForAnObject)
        ));
    }
}
