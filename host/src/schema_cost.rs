//! What checking arguments against an input schema may cost, worked out once when a
//! tool loads, so that no schema can make the host check a call for hours.
//!
//! A validator applies subschemas in place (`allOf`, `$ref`, `not`, `if`...) and to
//! the instance's children (`properties`, `items`...). `$ref`s are followed as if
//! inlined, so a few kilobytes of `allOf: [$ref next, $ref next]` are 2^40
//! subschemas. [`cost`] counts, for one instance path at most [`MAX_DEPTH`] deep, the
//! subschemas applied along it: every instance node gets at most that many, so a
//! check costs at most that times the instance's size. Each `(subschema, depth)` is
//! counted once (memoised), so the count itself is linear in the schema's size
//! times the depth, and it stops at [`MAX_SUBSCHEMAS`].
//!
//! Refused: a count over the limit, a `$ref` cycle that never descends into the
//! instance (it would apply forever at one place), and `$ref`s this count cannot
//! follow (only the schema's own: `#/json/pointer`, `#anchor`, and the `$id`s in it).

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The most subschemas a check may apply along one path of the arguments, `$ref`s
/// inlined. piton's own tools use a few dozen; a generated schema with shared
/// `$defs` a few thousand.
pub(crate) const MAX_SUBSCHEMAS: u64 = 100_000;

/// How deep arguments may nest for a schema whose `$ref`s recurse into the instance
/// (a tree): its cost is counted to this depth, and deeper arguments are an input
/// error. Other schemas take arguments of any depth.
pub(crate) const MAX_DEPTH: u32 = 64;

/// The longest chain of subschemas the count follows before it refuses the schema.
const MAX_CHAIN: usize = 1_000;

/// What a schema may cost, once counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cost {
    /// The most subschemas applied along one instance path (bounds every node's).
    pub(crate) per_node: u64,
    /// Whether the count stopped at [`MAX_DEPTH`] with subschemas left for deeper
    /// arguments (`$ref`s recurse into the instance): then arguments may nest at
    /// most that deep.
    pub(crate) depth_bound: bool,
}

/// Why a schema is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// It applies too many subschemas.
    #[error(
        "its input schema expands to more than {MAX_SUBSCHEMAS} subschemas when its $refs \
         are followed (limit {MAX_SUBSCHEMAS}); share fewer $refs per level, e.g. one \
         `$ref` instead of `allOf` of the same one twice"
    )]
    TooLarge,
    /// A `$ref` cycle applies at one instance location forever.
    #[error(
        "its input schema has a $ref cycle that never descends into the arguments (through \
         `{at}`), which would be checked forever; make every cycle go through `properties` \
         or `items`"
    )]
    Cycle {
        /// A `$ref` on the cycle.
        at: String,
    },
    /// A `$ref` this count cannot follow.
    #[error(
        "its input schema has a $ref piton does not follow: `{0}`; use refs within the \
         schema (#/$defs/NAME, #anchor)"
    )]
    Unresolved(String),
    /// A subschema below the root has an `$id`.
    #[error(
        "its input schema gives a subschema the $id `{0}`; piton follows $refs only \
         within one schema resource: move the $id to the root, or use `$anchor`"
    )]
    NestedId(String),
    /// Two subschemas have one name.
    #[error("its input schema gives two subschemas the name `{0}`; rename one")]
    Duplicate(String),
    /// Subschemas chained too long.
    #[error("its input schema chains more than {MAX_CHAIN} subschemas and $refs; flatten it")]
    TooDeep,
    /// The count could not run.
    #[error("its input schema could not be checked: {0}")]
    Thread(String),
}

/// The keywords whose subschemas apply to the instance itself.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_LIST: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas", "dependencies"];
/// Of these, at most one applies to a given property or item (by its name or index).
const PROPERTY_MAP: &[&str] = &["properties"];
const ITEM_LIST: &[&str] = &["prefixItems", "items"];
/// These may all apply to the same property (or item).
const PROPERTIES_ONE: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
];
const PROPERTIES_MAP: &[&str] = &["patternProperties"];
const ITEMS_ONE: &[&str] = &["items", "additionalItems", "contains", "unevaluatedItems"];
const REFS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];
/// Where subschemas are kept to be referred to, for `$id`s and anchors.
const DEFINITIONS: &[&str] = &["$defs", "definitions"];

/// The stack the count runs on: enough for [`MAX_CHAIN`] nested subschemas in an
/// unoptimised build (about 3.5 KiB each), with room to spare.
const STACK: usize = 16 * 1024 * 1024;

/// Counts what checking arguments against `schema` may cost; see the module docs.
///
/// The count recurses once per subschema in a chain, so it runs on a thread of its
/// own whose stack holds [`MAX_CHAIN`] of them, whatever thread asks.
pub(crate) fn cost(schema: &Value) -> Result<Cost, CostError> {
    std::thread::scope(|scope| {
        let counting = std::thread::Builder::new()
            .name("piton-schema-cost".to_owned())
            .stack_size(STACK)
            .spawn_scoped(scope, || count(schema))
            .map_err(|e| CostError::Thread(e.to_string()))?;
        counting
            .join()
            .unwrap_or_else(|_| Err(CostError::Thread("the count panicked".to_owned())))
    })
}

fn count(schema: &Value) -> Result<Cost, CostError> {
    let mut count = Count {
        root: schema,
        names: HashMap::new(),
        memo: HashMap::new(),
        chain: Vec::new(),
        depth_bound: false,
    };
    count.name_subschemas(schema, 0)?;
    let per_node = count.at(schema, MAX_DEPTH)?.total();
    Ok(Cost {
        per_node,
        depth_bound: count.depth_bound,
    })
}

/// How deep `value` nests (a scalar is 0), counted no further than `limit + 1`.
pub(crate) fn depth_over(value: &Value, limit: u32) -> bool {
    fn depth(value: &Value, left: u32) -> bool {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => return false,
        };
        let mut children = children.peekable();
        if children.peek().is_none() {
            return false;
        }
        left == 0 || children.any(|child| depth(child, left - 1))
    }
    depth(value, limit)
}

/// How many JSON values `value` holds (itself included), counted no further than
/// `limit`.
pub(crate) fn size_up_to(value: &Value, limit: u64) -> u64 {
    let mut seen = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        seen += 1;
        if seen >= limit {
            return limit;
        }
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    seen
}

struct Count<'a> {
    root: &'a Value,
    /// `$id`s and anchors (`#name`) to the subschemas that declare them.
    names: HashMap<String, &'a Value>,
    /// `(subschema address, depth left)` to its count.
    memo: HashMap<(usize, u32), Tally>,
    /// The subschemas being counted, outermost first.
    chain: Vec<(usize, u32, &'a str)>,
    depth_bound: bool,
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

impl<'a> Count<'a> {
    /// Records the `$id`s and anchors of `schema` and the subschemas below it.
    ///
    /// Only the root may have an `$id` (draft 4: `id`) other than `#name`: one below
    /// it would change the base that `$ref`s below it resolve against, and a count
    /// that resolved them otherwise than the validator could follow a cheap
    /// subschema where the validator follows a costly one. For the same reason a
    /// name given to two subschemas is refused.
    fn name_subschemas(&mut self, schema: &'a Value, depth: usize) -> Result<(), CostError> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        // The JSON parser bounds nesting; this bounds it again for a schema built in
        // code.
        if depth > MAX_CHAIN {
            return Err(CostError::TooDeep);
        }
        for key in ["$id", "id"] {
            if let Some(Value::String(id)) = map.get(key) {
                if depth > 0 && !id.starts_with('#') {
                    return Err(CostError::NestedId(id.chars().take(200).collect()));
                }
                self.name(id, schema)?;
            }
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(name)) = map.get(key) {
                self.name(&format!("#{name}"), schema)?;
            }
        }
        for (_, child) in subschemas(map).chain(definitions(map)) {
            self.name_subschemas(child, depth + 1)?;
        }
        Ok(())
    }

    fn name(&mut self, name: &str, schema: &'a Value) -> Result<(), CostError> {
        match self.names.insert(name.to_owned(), schema) {
            Some(other) if address(other) != address(schema) => {
                Err(CostError::Duplicate(name.chars().take(200).collect()))
            }
            _ => Ok(()),
        }
    }

    /// The subschema `reference` names, from `schema`.
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        if let Some(found) = self.names.get(reference) {
            return Some(found);
        }
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let document = if base.is_empty() {
            self.root
        } else {
            self.names.get(base).copied()?
        };
        if fragment.is_empty() {
            return Some(document);
        }
        if !fragment.starts_with('/') {
            return self.names.get(&format!("#{fragment}")).copied();
        }
        let pointer = percent_decode(fragment)?;
        document.pointer(&pointer)
    }

    /// The most subschemas applied along one instance path at most `depth` deep,
    /// from `schema`.
    fn at(&mut self, schema: &'a Value, depth: u32) -> Result<Tally, CostError> {
        let Value::Object(map) = schema else {
            return Ok(Tally {
                here: 1,
                properties: 0,
                items: 0,
            });
        };
        let key = (address(schema), depth);
        if let Some(&known) = self.memo.get(&key) {
            return Ok(known);
        }
        // The same subschema at the same depth: nothing on the way descended.
        if let Some(start) = self.chain.iter().position(|(a, d, _)| (*a, *d) == key) {
            let through = self.chain[start..]
                .iter()
                .map(|(_, _, through)| *through)
                .find(|through| !through.is_empty())
                .unwrap_or_default();
            return Err(CostError::Cycle {
                at: through.chars().take(200).collect(),
            });
        }
        if self.chain.len() >= MAX_CHAIN {
            return Err(CostError::TooDeep);
        }
        let through = REFS
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        self.chain.push((key.0, depth, through));
        let total = self.count(map, depth);
        self.chain.pop();
        let total = total?;
        self.memo.insert(key, total);
        Ok(total)
    }

    fn count(&mut self, map: &'a Map<String, Value>, depth: u32) -> Result<Tally, CostError> {
        let mut tally = Tally {
            here: 1,
            properties: 0,
            items: 0,
        };
        let mut in_place = Vec::new();
        for key in REFS {
            if let Some(reference) = map.get(*key) {
                let reference = reference.as_str().unwrap_or_default();
                let target = self
                    .resolve(reference)
                    .ok_or_else(|| CostError::Unresolved(reference.chars().take(200).collect()))?;
                in_place.push(target);
            }
        }
        let mut one_property = 0u64;
        let mut one_item = 0u64;
        for (kind, child) in subschemas(map) {
            if kind == Applies::InPlace {
                in_place.push(child);
                continue;
            }
            let Some(deeper) = depth.checked_sub(1) else {
                // Deeper arguments would meet more subschemas: they are refused.
                self.depth_bound = true;
                continue;
            };
            let n = self.at(child, deeper)?.total();
            match kind {
                Applies::InPlace => {}
                Applies::ToOneProperty => one_property = one_property.max(n),
                Applies::ToOneItem => one_item = one_item.max(n),
                Applies::ToProperties => tally.properties = add(tally.properties, n)?,
                Applies::ToItems => tally.items = add(tally.items, n)?,
            }
        }
        tally.properties = add(tally.properties, one_property)?;
        tally.items = add(tally.items, one_item)?;
        for child in in_place {
            let more = self.at(child, depth)?;
            tally = Tally {
                here: add(tally.here, more.here)?,
                properties: add(tally.properties, more.properties)?,
                items: add(tally.items, more.items)?,
            };
        }
        tally.total_checked()?;
        Ok(tally)
    }
}

/// What one subschema applies, at one depth: here (in place), and along the costliest
/// path below through a property or through an item (never both for one child).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tally {
    here: u64,
    properties: u64,
    items: u64,
}

impl Tally {
    fn total(self) -> u64 {
        self.here.saturating_add(self.properties.max(self.items))
    }

    fn total_checked(self) -> Result<u64, CostError> {
        add(0, self.total())
    }
}

/// `total + n`, or the schema is refused if that is over the limit.
fn add(total: u64, n: u64) -> Result<u64, CostError> {
    let sum = total.saturating_add(n);
    if sum > MAX_SUBSCHEMAS {
        Err(CostError::TooLarge)
    } else {
        Ok(sum)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Applies {
    InPlace,
    /// At most one of its kind applies to a given property.
    ToOneProperty,
    /// Each may apply to every property.
    ToProperties,
    /// At most one of its kind applies to a given item.
    ToOneItem,
    /// Each may apply to every item.
    ToItems,
}

/// The subschemas a validator applies, with how.
fn subschemas(map: &Map<String, Value>) -> impl Iterator<Item = (Applies, &Value)> {
    let one = |keys: &'static [&'static str], how| {
        keys.iter()
            .filter_map(move |k| map.get(*k))
            .filter(|v| v.is_object() || v.is_boolean())
            .map(move |v| (how, v))
    };
    let list = |keys: &'static [&'static str], how| {
        keys.iter()
            .filter_map(move |k| map.get(*k).and_then(Value::as_array))
            .flatten()
            .map(move |v| (how, v))
    };
    let values = |keys: &'static [&'static str], how| {
        keys.iter()
            .filter_map(move |k| map.get(*k).and_then(Value::as_object))
            .flat_map(Map::values)
            .filter(|v| v.is_object() || v.is_boolean())
            .map(move |v| (how, v))
    };
    one(IN_PLACE_ONE, Applies::InPlace)
        .chain(list(IN_PLACE_LIST, Applies::InPlace))
        .chain(values(IN_PLACE_MAP, Applies::InPlace))
        .chain(values(PROPERTY_MAP, Applies::ToOneProperty))
        .chain(one(PROPERTIES_ONE, Applies::ToProperties))
        .chain(values(PROPERTIES_MAP, Applies::ToProperties))
        .chain(list(ITEM_LIST, Applies::ToOneItem))
        .chain(one(ITEMS_ONE, Applies::ToItems))
}

/// The subschemas kept to be referred to.
fn definitions(map: &Map<String, Value>) -> impl Iterator<Item = (Applies, &Value)> {
    DEFINITIONS
        .iter()
        .filter_map(move |k| map.get(*k).and_then(Value::as_object))
        .flat_map(Map::values)
        .map(|v| (Applies::InPlace, v))
}

/// `%25`-style escapes in a URI fragment decoded; `None` if they are not UTF-8.
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = fragment.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
