//! A tool as the program sees it: a Python function, its name made an identifier,
//! its parameters and their types read from the tool's input schema, for the
//! description the model reads and for the interpreter, which binds positional
//! arguments in the same order.

use serde_json::Value;

use crate::tool::Tool;

/// Names a program cannot give a tool's function: Python's keywords, and the
/// builtins a program would lose.
const TAKEN: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "enumerate",
    "filter",
    "float",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "type",
    "zip",
];

/// One parameter of a tool's function.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Param {
    /// Its key in the arguments object.
    pub(crate) key: String,
    /// Its type, in Python.
    pub(crate) annotation: String,
    /// Whether the schema requires it.
    pub(crate) required: bool,
    /// Its default, as a Python literal, when the schema gives one.
    pub(crate) default: Option<String>,
}

/// A tool's function.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Function {
    /// Its name in the program.
    pub(crate) name: String,
    /// The tool's name in the registry.
    pub(crate) tool: String,
    /// Required parameters first, then the optional ones.
    pub(crate) params: Vec<Param>,
    /// The first line of the tool's description.
    pub(crate) summary: String,
    /// Whether the tool's own hints say read-only.
    pub(crate) read_only: bool,
}

impl Function {
    /// The function of `tool`, named after it unless that name is `taken`.
    pub(crate) fn of(tool: &dyn Tool, taken: &[String]) -> Self {
        let spec = tool.spec();
        let mut name = identifier(&spec.name);
        if TAKEN.contains(&name.as_str()) {
            name.push_str("_tool");
        }
        let base = name.clone();
        let mut n = 2;
        while taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        Self {
            name,
            tool: spec.name.clone(),
            params: params_of(&spec.input_schema),
            summary: spec
                .description
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or_default()
                .to_owned(),
            read_only: tool.hints().is_read_only(),
        }
    }

    /// The keys positional arguments bind to, in order.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.params.iter().map(|p| p.key.clone()).collect()
    }

    /// `def name(a: str, b: int = 3) -> Any:  # read-only. Summary.`
    pub(crate) fn line(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                let name = identifier(&p.key);
                match (&p.default, p.required) {
                    (_, true) => format!("{name}: {}", p.annotation),
                    (Some(default), false) => format!("{name}: {} = {default}", p.annotation),
                    (None, false) if p.annotation.split(" | ").any(|t| t == "None") => {
                        format!("{name}: {} = None", p.annotation)
                    }
                    (None, false) => format!("{name}: {} | None = None", p.annotation),
                }
            })
            .collect();
        let mut line = format!("def {}({}) -> Any:", self.name, params.join(", "));
        let mut notes = Vec::new();
        if self.read_only {
            notes.push("read-only".to_owned());
        }
        if !self.summary.is_empty() {
            notes.push(cut(&self.summary, 200).to_owned());
        }
        if !notes.is_empty() {
            line.push_str("  # ");
            line.push_str(&notes.join(". "));
        }
        line
    }
}

/// `name` as a Python identifier: other characters become `_`, and a leading digit
/// gets one before it.
fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The parameters of an object schema: required first, each group in the
/// schema's order.
fn params_of(schema: &Value) -> Vec<Param> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let param = |(key, property): (&String, &Value)| Param {
        key: key.clone(),
        annotation: python_type(property, schema, 0),
        required: required.contains(&key.as_str()),
        default: property.get("default").map(python_literal),
    };
    let (mut first, rest): (Vec<Param>, Vec<Param>) =
        properties.iter().map(param).partition(|p| p.required);
    first.extend(rest);
    first
}

/// The Python type a JSON Schema describes, as far as it says; `root` is the whole
/// input schema, which `$ref`s point into.
fn python_type(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > 3 {
        return "Any".into();
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        return python_type(target, root, depth + 1);
    }
    if let Some(values) = literals(schema) {
        return format!("Literal[{}]", values.join(", "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(choices) = schema.get(key).and_then(Value::as_array) {
            // Choices that are each one value (schemars' enums) are one Literal.
            let each: Option<Vec<Vec<String>>> = choices.iter().map(literals).collect();
            if let Some(each) = each {
                return format!("Literal[{}]", each.concat().join(", "));
            }
            return union(choices.iter().map(|c| python_type(c, root, depth + 1)));
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => type_name(kind, schema, root, depth),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| type_name(kind, schema, root, depth)),
        ),
        _ => "Any".into(),
    }
}

/// The values a schema allows when it lists them (`enum`, `const`), as Python.
fn literals(schema: &Value) -> Option<Vec<String>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(python_literal).collect());
    }
    schema.get("const").map(|value| vec![python_literal(value)])
}

fn type_name(kind: &str, schema: &Value, root: &Value, depth: usize) -> String {
    match kind {
        "string" => "str".into(),
        "integer" => "int".into(),
        "number" => "float".into(),
        "boolean" => "bool".into(),
        "null" => "None".into(),
        "object" => "dict".into(),
        "array" => match schema.get("items") {
            Some(items) => format!("list[{}]", python_type(items, root, depth + 1)),
            None => "list".into(),
        },
        _ => "Any".into(),
    }
}

fn union(types: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for t in types {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    match seen.len() {
        0 => "Any".into(),
        _ => seen.join(" | "),
    }
}

/// A JSON value written as Python: `True`, `None`, `'text'`, `[1, 2]`.
fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let escaped = s
                .replace('\\', "\\\\")
                .replace('\'', "\\'")
                .replace('\n', "\\n");
            format!("'{}'", cut(&escaped, 60))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(python_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    python_literal(&Value::from(k.as_str())),
                    python_literal(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_becomes_a_signature_required_first_with_defaults() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "limit": {"type": "integer", "default": 3},
                "mode": {"enum": ["fast", "exact"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "maybe": {"type": ["string", "null"]},
                "any": {}
            },
            "required": ["text", "tags"]
        });
        let f = Function {
            name: "count".into(),
            tool: "count".into(),
            params: params_of(&schema),
            summary: "Count things.".into(),
            read_only: true,
        };
        assert_eq!(
            f.line(),
            "def count(tags: list[str], text: str, any: Any | None = None, limit: int = 3, \
             maybe: str | None = None, mode: Literal['fast', 'exact'] | None = None) \
             -> Any:  # read-only. Count things."
        );
        assert_eq!(f.keys(), ["tags", "text", "any", "limit", "maybe", "mode"]);
    }

    #[test]
    fn refs_and_choices_of_one_value_each_are_followed() {
        let schema = json!({
            "$defs": {"Op": {"oneOf": [{"const": "list"}, {"const": "read"}]}},
            "type": "object",
            "properties": {
                "op": {"$ref": "#/$defs/Op"},
                "n": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
            },
            "required": ["op", "n"]
        });
        let types: Vec<String> = params_of(&schema)
            .into_iter()
            .map(|p| p.annotation)
            .collect();
        assert_eq!(types, ["int | str", "Literal['list', 'read']"]);
    }

    #[test]
    fn names_become_identifiers_that_hide_no_builtin() {
        assert_eq!(identifier("fetch-url"), "fetch_url");
        assert_eq!(identifier("files__read"), "files__read");
        assert_eq!(identifier("3d"), "_3d");
        assert_eq!(python_literal(&json!("it's")), "'it\\'s'");
        assert_eq!(
            python_literal(&json!({"a": [true, null]})),
            "{'a': [True, None]}"
        );
    }
}
