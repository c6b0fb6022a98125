//! Judges tool-call arguments against their schema as they stream: fed the events of
//! [`crate::engine::json_stream`], it holds one frame per open container the schema
//! constrains and at most one value held whole (bounded), never the text.
//!
//! Input: a [`StreamPlan`] and the parser's events. Output: a [`StreamVerdict`]: the schema
//! failures, with the instance and schema paths the whole-document validator gives (a test
//! compares both on every fixture split at every offset and on generated schemas), or
//! `Incomplete` when a keyword needed what was not held: `enum`, `const`, `pattern` or
//! `format` on a string past the hold bound, a number token past its bound, an `enum` or
//! `const` container past the bound, a failure under a key too long to name, or a key given
//! twice (the whole document keeps the last one; the stream saw both). Never a silent pass.

use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Map, Value};

use super::SchemaFailure;
use super::plan::{Additional, NAME_BOUND, Node, NodeId, Rules, StreamPlan, escape, types};
use crate::engine::json_stream::{Event, Text};

/// Distinct keys remembered per object (to find one given twice); past it the verdict is
/// incomplete.
const KEYS_REMEMBERED: usize = 4096;

/// What streaming the arguments through the schema gave.
#[derive(Debug)]
pub enum StreamVerdict {
    /// Every keyword was judged: these failures (empty when valid).
    Checked(Vec<SchemaFailure>),
    /// Some keyword could not be judged with what was held; these failures were found anyway.
    Incomplete(Vec<SchemaFailure>),
}

#[derive(Debug)]
enum Kind {
    Object {
        required_seen: Vec<bool>,
        count: u64,
        keys: HashSet<u64>,
        unexpected: Vec<String>,
        /// The node of the member whose key came last, and whether its path is known.
        next: Option<NodeId>,
        next_known: bool,
    },
    Array {
        count: u64,
    },
}

#[derive(Debug)]
struct Frame {
    node: NodeId,
    /// Length of the checker's path at this container.
    path_len: usize,
    /// This container's path is known (no segment too long to keep).
    known: bool,
    kind: Kind,
    /// The generation of the held value this frame is judged on (`enum`/`const`).
    held: Option<u64>,
}

/// The streaming checker of one call's arguments.
#[derive(Debug)]
pub struct StreamCheck {
    plan: Arc<StreamPlan>,
    hold: usize,
    max_failures: usize,
    frames: Vec<Frame>,
    /// Open containers below an unconstrained slot.
    skip: u32,
    started: bool,
    path: String,
    failures: Vec<SchemaFailure>,
    incomplete: bool,
    /// The failures may be wrong (a key given twice).
    unsure: bool,
    held: Option<Held>,
    generation: u64,
}

impl StreamCheck {
    /// A checker for `plan` (which must be [`StreamPlan::Streamed`]; a whole plan is always
    /// incomplete), holding values up to `hold` bytes and listing at most `max_failures`.
    pub fn new(plan: Arc<StreamPlan>, hold: usize, max_failures: usize) -> StreamCheck {
        StreamCheck {
            plan,
            hold,
            max_failures,
            frames: Vec::new(),
            skip: 0,
            started: false,
            path: String::new(),
            failures: Vec::new(),
            incomplete: false,
            unsure: false,
            held: None,
            generation: 0,
        }
    }

    /// Heap bytes held (frames, path, the value held whole), roughly.
    pub fn held_bytes(&self) -> usize {
        self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.path.capacity()
            + self.held.as_ref().map_or(0, |held| held.bytes)
    }

    /// The verdict once the parser finished the text.
    pub fn verdict(self) -> StreamVerdict {
        if self.unsure || !matches!(*self.plan, StreamPlan::Streamed(_)) {
            return StreamVerdict::Incomplete(Vec::new());
        }
        if self.incomplete {
            StreamVerdict::Incomplete(self.failures)
        } else {
            StreamVerdict::Checked(self.failures)
        }
    }

    /// Follows one parser event.
    pub fn event(&mut self, event: Event<'_>) {
        let plan = Arc::clone(&self.plan);
        let StreamPlan::Streamed(nodes) = &*plan else {
            return;
        };
        if let Some(held) = &mut self.held
            && !held.take(event, self.hold)
        {
            self.held = None;
        }
        if self.skip > 0 {
            match event {
                Event::BeginObject | Event::BeginArray => self.skip += 1,
                Event::EndObject | Event::EndArray => self.skip -= 1,
                _ => {}
            }
            return;
        }
        match event {
            Event::Key(key) => self.key(nodes, key),
            Event::EndObject | Event::EndArray => self.close(nodes),
            _ => {
                let (node, known) = self.slot(nodes);
                self.value(nodes, node, known, event);
            }
        }
    }

    /// The node the next value is judged by, and whether its path is known; moves the path
    /// to it.
    fn slot(&mut self, nodes: &[Node]) -> (Option<NodeId>, bool) {
        let Some(top) = self.frames.last_mut() else {
            if self.started {
                return (None, false);
            }
            self.started = true;
            // The plan lays nodes out children first: the root is the last.
            return (Some(nodes.len().saturating_sub(1)), true);
        };
        match &mut top.kind {
            Kind::Object {
                next, next_known, ..
            } => (next.take(), top.known && *next_known),
            Kind::Array { count } => {
                self.path.truncate(top.path_len);
                self.path.push('/');
                self.path.push_str(&count.to_string());
                *count += 1;
                let items = match nodes.get(top.node) {
                    Some(Node::Rules(rules)) => rules.items,
                    _ => None,
                };
                (items, top.known)
            }
        }
    }

    fn key(&mut self, nodes: &[Node], key: Text<'_>) {
        let Some(top) = self.frames.last_mut() else {
            return;
        };
        let Some(Node::Rules(rules)) = nodes.get(top.node) else {
            return;
        };
        let Kind::Object {
            required_seen,
            count,
            keys,
            unexpected,
            next,
            next_known,
        } = &mut top.kind
        else {
            return;
        };
        self.path.truncate(top.path_len);
        *count += 1;
        let name = match key {
            Text::Held(name) => Some(name),
            Text::Long { .. } => None,
        };
        match name {
            Some(name) if keys.len() < KEYS_REMEMBERED => {
                let mut hasher = DefaultHasher::new();
                name.hash(&mut hasher);
                if !keys.insert(hasher.finish()) {
                    self.unsure = true;
                }
            }
            _ => self.unsure = true,
        }
        *next_known = false;
        if let Some(name) = name.filter(|name| name.len() <= NAME_BOUND) {
            self.path.push('/');
            self.path.push_str(&escape(name));
            *next_known = true;
        }
        for (at, required) in rules.required.iter().enumerate() {
            if name == Some(required.as_str()) {
                required_seen[at] = true;
            }
        }
        *next = match name.and_then(|name| rules.properties.get(name)) {
            Some(&node) => Some(node),
            None => match rules.additional {
                Additional::Any => None,
                Additional::Refused => {
                    if unexpected.len() < 8 {
                        unexpected
                            .push(name.map_or_else(|| "(a long key)".to_owned(), str::to_owned));
                    }
                    None
                }
                Additional::Schema(node) => Some(node),
            },
        };
    }

    fn value(&mut self, nodes: &[Node], node: Option<NodeId>, known: bool, event: Event<'_>) {
        let container = matches!(event, Event::BeginObject | Event::BeginArray);
        let rules = match node.and_then(|node| nodes.get(node)) {
            None | Some(Node::Any) => None,
            Some(Node::Never(location)) => {
                let location = location.clone();
                self.fail(
                    known,
                    "",
                    location,
                    "False schema does not allow this value".to_owned(),
                );
                None
            }
            Some(Node::Rules(rules)) => Some(rules),
        };
        let (Some(rules), Some(node)) = (rules, node) else {
            if container {
                self.skip = 1;
            }
            return;
        };
        if !container {
            return self.scalar(rules, known, event);
        }
        let object = event == Event::BeginObject;
        let held = if rules.whole_value {
            if self.held.is_none() {
                self.generation += 1;
                let mut held = Held::new(self.generation);
                held.take(event, self.hold);
                self.held = Some(held);
            }
            self.held.as_ref().map(|held| held.generation)
        } else {
            let bit = if object { types::OBJECT } else { types::ARRAY };
            if let Some(allowed) = rules.types.filter(|allowed| allowed & bit == 0) {
                let detail = format!(
                    "{} is not of type {}",
                    if object { "an object" } else { "an array" },
                    names(allowed)
                );
                self.fail(known, "", format!("{}/type", rules.location), detail);
            }
            None
        };
        let kind = if object {
            Kind::Object {
                required_seen: vec![false; rules.required.len()],
                count: 0,
                keys: HashSet::new(),
                unexpected: Vec::new(),
                next: None,
                next_known: false,
            }
        } else {
            Kind::Array { count: 0 }
        };
        self.frames.push(Frame {
            node,
            path_len: self.path.len(),
            known,
            kind,
            held,
        });
    }

    fn scalar(&mut self, rules: &Rules, known: bool, event: Event<'_>) {
        let Some(validator) = &rules.value else {
            return;
        };
        let value = match event {
            Event::String(Text::Held(text)) => Value::String(text.to_owned()),
            Event::Number(Text::Held(token)) => match serde_json::from_str(token) {
                Ok(number) => number,
                Err(_) => return self.incomplete = true,
            },
            Event::Bool(flag) => Value::Bool(flag),
            Event::Null => Value::Null,
            Event::String(Text::Long { chars, .. }) => {
                return self.long_string(rules, known, chars);
            }
            _ => return self.incomplete = true,
        };
        for (instance, schema, message) in judge(validator, &value, &rules.location) {
            self.fail(known, &instance, schema, message);
        }
    }

    /// A string past the hold bound: its type and length, and incomplete for what needs its
    /// text.
    fn long_string(&mut self, rules: &Rules, known: bool, chars: u64) {
        if let Some(allowed) = rules.types.filter(|allowed| allowed & types::STRING == 0) {
            let detail = format!(
                "a string of {chars} chars is not of type {}",
                names(allowed)
            );
            self.fail(known, "", format!("{}/type", rules.location), detail);
        }
        if let Some(min) = rules.min_length.filter(|&min| chars < min) {
            let detail = format!("a string of {chars} chars is shorter than {min} characters");
            self.fail(known, "", format!("{}/minLength", rules.location), detail);
        }
        if let Some(max) = rules.max_length.filter(|&max| chars > max) {
            let detail = format!("a string of {chars} chars is longer than {max} characters");
            self.fail(known, "", format!("{}/maxLength", rules.location), detail);
        }
        if rules.whole_text {
            self.incomplete = true;
        }
    }

    fn close(&mut self, nodes: &[Node]) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        self.path.truncate(frame.path_len);
        let Some(Node::Rules(rules)) = nodes.get(frame.node) else {
            return;
        };
        let known = frame.known;
        let at = |keyword: &str| format!("{}/{keyword}", rules.location);
        match &frame.kind {
            Kind::Object {
                required_seen,
                count,
                unexpected,
                ..
            } => {
                for (name, seen) in rules.required.iter().zip(required_seen) {
                    if !seen {
                        self.fail(
                            known,
                            "",
                            at("required"),
                            format!("{name:?} is a required property"),
                        );
                    }
                }
                if !unexpected.is_empty() {
                    let detail = format!(
                        "Additional properties are not allowed ({unexpected:?} were unexpected)"
                    );
                    self.fail(known, "", at("additionalProperties"), detail);
                }
                self.counts(
                    known,
                    *count,
                    rules.min_properties,
                    rules.max_properties,
                    &at,
                    "properties",
                );
            }
            Kind::Array { count } => {
                self.counts(
                    known,
                    *count,
                    rules.min_items,
                    rules.max_items,
                    &at,
                    "items",
                );
            }
        }
        let Some(generation) = frame.held else {
            return;
        };
        let judged = match &self.held {
            Some(held) if held.generation == generation => held.last().map(|value| {
                rules.value.as_ref().map_or_else(Vec::new, |validator| {
                    judge(validator, value, &rules.location)
                })
            }),
            _ => None,
        };
        match judged {
            Some(failures) => {
                for (instance, schema, message) in failures {
                    self.fail(known, &instance, schema, message);
                }
            }
            None => self.incomplete = true,
        }
        if self
            .held
            .as_ref()
            .is_some_and(|held| held.generation == generation && held.done())
        {
            self.held = None;
        }
    }

    fn counts(
        &mut self,
        known: bool,
        count: u64,
        min: Option<u64>,
        max: Option<u64>,
        at: &dyn Fn(&str) -> String,
        what: &str,
    ) {
        let keyword = |prefix: &str| {
            let mut name = what.to_owned();
            if let Some(first) = name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            at(&format!("{prefix}{name}"))
        };
        if let Some(min) = min.filter(|&min| count < min) {
            self.fail(
                known,
                "",
                keyword("min"),
                format!("has {count} {what}, fewer than {min}"),
            );
        }
        if let Some(max) = max.filter(|&max| count > max) {
            self.fail(
                known,
                "",
                keyword("max"),
                format!("has {count} {what}, more than {max}"),
            );
        }
    }

    /// Records a failure at the current path plus `below`; one whose path was not kept makes
    /// the verdict incomplete instead.
    fn fail(&mut self, known: bool, below: &str, schema_path: String, message: String) {
        if !known {
            self.incomplete = true;
            return;
        }
        if self.failures.len() < self.max_failures {
            self.failures.push(SchemaFailure {
                instance_path: format!("{}{below}", self.path),
                schema_path,
                message,
            });
        }
    }
}

/// A node's value keywords' failures on `value`: instance path below the value, schema path
/// from the root, message.
fn judge(validator: &Validator, value: &Value, location: &str) -> Vec<(String, String, String)> {
    validator
        .iter_errors(value)
        .map(|error| {
            (
                error.instance_path().as_str().to_owned(),
                format!("{location}{}", error.schema_path().as_str()),
                error.to_string(),
            )
        })
        .collect()
}

fn names(bits: u8) -> String {
    let all = [
        (types::NULL, "null"),
        (types::BOOLEAN, "boolean"),
        (types::OBJECT, "object"),
        (types::ARRAY, "array"),
        (types::NUMBER, "number"),
        (types::STRING, "string"),
        (types::INTEGER, "integer"),
    ];
    let named: Vec<&str> = all
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect();
    format!("{named:?}")
}

/// A container held whole (up to the bound) for `enum`/`const`, built from the events.
#[derive(Debug)]
struct Held {
    generation: u64,
    /// Open containers: an array's items, or an object's members and the key last read.
    open: Vec<(Value, Option<String>)>,
    /// The value closed last (the whole held value once `open` is empty).
    last: Option<Value>,
    /// Where the value closed last sits in its parent: the object key, or `None` for an
    /// array's last item.
    last_key: Option<String>,
    bytes: usize,
}

impl Held {
    fn new(generation: u64) -> Held {
        Held {
            generation,
            open: Vec::new(),
            last: None,
            last_key: None,
            bytes: 0,
        }
    }

    /// Whether the held value closed.
    fn done(&self) -> bool {
        self.open.is_empty() && self.last.is_some()
    }

    /// The value closed last.
    fn last(&self) -> Option<&Value> {
        if let Some(last) = &self.last {
            return Some(last);
        }
        let (parent, _) = self.open.last()?;
        match (parent, &self.last_key) {
            (Value::Array(items), None) => items.last(),
            (Value::Object(members), Some(key)) => members.get(key),
            _ => None,
        }
    }

    /// Adds one event; `false` once past the bound.
    fn take(&mut self, event: Event<'_>, bound: usize) -> bool {
        if !matches!(event, Event::EndObject | Event::EndArray) {
            self.bytes += 16;
        }
        let value = match event {
            Event::BeginObject => {
                self.open.push((Value::Object(Map::new()), None));
                return self.bytes <= bound;
            }
            Event::BeginArray => {
                self.open.push((Value::Array(Vec::new()), None));
                return self.bytes <= bound;
            }
            Event::Key(Text::Held(key)) => {
                self.bytes += key.len();
                if let Some((_, slot)) = self.open.last_mut() {
                    *slot = Some(key.to_owned());
                }
                return self.bytes <= bound;
            }
            Event::EndObject | Event::EndArray => match self.open.pop() {
                Some((value, _)) => value,
                None => return false,
            },
            Event::String(Text::Held(text)) => {
                self.bytes += text.len();
                Value::String(text.to_owned())
            }
            Event::Number(Text::Held(token)) => {
                self.bytes += token.len();
                match serde_json::from_str(token) {
                    Ok(number) => number,
                    Err(_) => return false,
                }
            }
            Event::Bool(flag) => Value::Bool(flag),
            Event::Null => Value::Null,
            Event::Key(Text::Long { .. })
            | Event::String(Text::Long { .. })
            | Event::Number(Text::Long { .. }) => {
                return false;
            }
        };
        if self.bytes > bound {
            return false;
        }
        self.attach(value);
        true
    }

    fn attach(&mut self, value: Value) {
        match self.open.last_mut() {
            None => {
                self.last = Some(value);
                self.last_key = None;
            }
            Some((Value::Array(items), _)) => {
                items.push(value);
                self.last_key = None;
            }
            Some((Value::Object(members), key)) => {
                let key = key.take().unwrap_or_default();
                members.insert(key.clone(), value);
                self.last_key = Some(key);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
