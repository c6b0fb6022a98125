//! A small YAML tree for reading cassettes, built from saphyr-parser's events.
//!
//! Input: a cassette's text. Output: a [`Node`] per document: mappings (in file order),
//! sequences, and scalars kept as their text with their style and tag, so a `!!binary` body is
//! told from a string and a quoted `"200"` from a plain `200`. The tree is tooltap's own, not
//! saphyr's, so that every resource an input can grow is bounded here: nesting deeper than
//! [`MAX_DEPTH`] is an error (a tree is dropped recursively), and aliases (PyYAML writes `&id001`
//! for an object it meets twice) are expanded by copying, at most [`ALIAS_BUDGET`] nodes and as
//! many bytes as the input holds, so a "billion laughs" file is an error, not a memory bomb.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, EventReceiver, Parser, ScalarStyle, Tag};

/// Collections nested deeper than this are refused (cassettes nest about 6 deep; a parsed
/// JSON body a few dozen).
pub const MAX_DEPTH: usize = 256;
/// Nodes that alias expansion may copy in one file.
pub const ALIAS_BUDGET: usize = 1_000_000;

/// One YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Scalar(Scalar),
    Seq(Vec<Node>),
    /// Keys in file order; a key that is not a scalar is kept as its text `?`.
    Map(Vec<(String, Node)>),
}

/// A scalar's text as written, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    pub text: String,
    /// Written without quotes (`200`, `null`, `true`), so the core schema decides its type.
    pub plain: bool,
    /// The tag's suffix under the core schema handle (`binary` for `!!binary`).
    pub core_tag: Option<String>,
}

impl Node {
    /// The value under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes the value under `key` out of a mapping (so that its text moves, not copies).
    pub fn take(&mut self, key: &str) -> Option<Node> {
        match self {
            Node::Map(entries) => {
                let at = entries.iter().position(|(k, _)| k == key)?;
                Some(entries.swap_remove(at).1)
            }
            _ => None,
        }
    }

    /// A scalar's text, whatever its style (`None` for collections and nulls).
    #[cfg(test)]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar(scalar) if !scalar.is_null() => Some(&scalar.text),
            _ => None,
        }
    }

    /// A scalar's text, moved out (`None` for collections and nulls).
    pub fn into_string(self) -> Option<String> {
        match self {
            Node::Scalar(scalar) if !scalar.is_null() => Some(scalar.text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Node::Scalar(scalar) if scalar.is_null())
    }

    /// A plain integer scalar.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Node::Scalar(scalar) if scalar.plain => scalar.text.trim().parse().ok(),
            _ => None,
        }
    }

    /// The node as JSON under the YAML core schema (pydantic-ai's `parsed_body` is a JSON body
    /// written as YAML): plain scalars become null, booleans and numbers when they read as such.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Scalar(scalar) if !scalar.plain => Value::String(scalar.text.clone()),
            Node::Scalar(scalar) => plain_json(&scalar.text),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }
}

impl Scalar {
    /// `null`, `~` or nothing, written plain.
    pub fn is_null(&self) -> bool {
        self.plain && matches!(self.text.as_str(), "" | "~" | "null" | "Null" | "NULL")
    }
}

/// A plain scalar under the core schema.
fn plain_json(text: &str) -> serde_json::Value {
    use serde_json::Value;
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(int) = text.parse::<i64>() {
        return Value::from(int);
    }
    if let Ok(number) = serde_json::from_str::<serde_json::Number>(text) {
        return Value::Number(number);
    }
    Value::String(text.to_owned())
}

/// The documents of a YAML text, or why it is not YAML tooltap reads.
pub fn load(text: &str) -> Result<Vec<Node>, String> {
    let mut builder = Builder {
        stack: Vec::new(),
        documents: Vec::new(),
        anchors: HashMap::new(),
        alias_nodes: 0,
        alias_bytes: 0,
        byte_budget: text.len(),
        error: None,
    };
    // Events are pulled one at a time: the parser's own `load` recurses once per nesting
    // level (100,000 block sequences on one line overflowed the stack), its event iterator
    // does not.
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|error| format!("not YAML: {error}"))?;
        builder.on_event(event);
        if builder.error.is_some() {
            break;
        }
    }
    match builder.error {
        Some(error) => Err(error),
        None => Ok(builder.documents),
    }
}

/// A collection being built: its anchor, and a pending key for a mapping.
enum Open {
    Seq(usize, Vec<Node>),
    Map(usize, Vec<(String, Node)>, Option<String>),
}

struct Builder {
    stack: Vec<Open>,
    documents: Vec<Node>,
    anchors: HashMap<usize, Node>,
    alias_nodes: usize,
    alias_bytes: usize,
    byte_budget: usize,
    /// The first error; events after it are ignored.
    error: Option<String>,
}

impl Builder {
    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
        self.stack.clear();
        self.anchors.clear();
    }

    /// Places a finished node in its parent (or as a document), keeping it under its anchor.
    fn place(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, key)) => match key.take() {
                Some(key) => entries.push((key, node)),
                None => *key = Some(key_text(&node)),
            },
        }
    }

    fn alias(&mut self, id: usize) {
        let Some(node) = self.anchors.get(&id) else {
            return self.fail(format!("an alias to an unknown anchor ({id})"));
        };
        let (nodes, bytes) = size(node);
        self.alias_nodes = self.alias_nodes.saturating_add(nodes);
        self.alias_bytes = self.alias_bytes.saturating_add(bytes);
        if self.alias_nodes > ALIAS_BUDGET || self.alias_bytes > self.byte_budget {
            return self.fail(
                "aliases expand past the bound (more nodes or bytes than the file holds): \
                 refused"
                    .into(),
            );
        }
        let node = node.clone();
        self.place(node, 0);
    }
}

/// A mapping key's text: a scalar's own, anything else `?`.
fn key_text(node: &Node) -> String {
    match node {
        Node::Scalar(scalar) => scalar.text.clone(),
        _ => "?".into(),
    }
}

/// Nodes and scalar bytes in a tree (for the alias budget).
fn size(node: &Node) -> (usize, usize) {
    match node {
        Node::Scalar(scalar) => (1, scalar.text.len()),
        Node::Seq(items) => items.iter().map(size).fold((1, 0), add),
        Node::Map(entries) => entries
            .iter()
            .map(|(key, value)| add(size(value), (1, key.len())))
            .fold((1, 0), add),
    }
}

fn add(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

fn core_suffix(tag: Option<&Cow<'_, Tag>>) -> Option<String> {
    let tag = tag?;
    tag.is_yaml_core_schema().then(|| tag.suffix.clone())
}

impl<'input> EventReceiver<'input> for Builder {
    fn on_event(&mut self, event: Event<'input>) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let scalar = Scalar {
                    text: text.into_owned(),
                    plain: style == ScalarStyle::Plain && tag.is_none(),
                    core_tag: core_suffix(tag.as_ref()),
                };
                self.place(Node::Scalar(scalar), anchor);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _)
                if self.stack.len() >= MAX_DEPTH =>
            {
                let _ = anchor;
                self.fail(format!("nested deeper than {MAX_DEPTH} levels: refused"));
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Open::Seq(anchor, Vec::new())),
            Event::MappingStart(anchor, _) => {
                self.stack.push(Open::Map(anchor, Vec::new(), None));
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Open::Seq(anchor, items)) => self.place(Node::Seq(items), anchor),
                Some(Open::Map(anchor, entries, _)) => self.place(Node::Map(entries), anchor),
                None => self.fail("a collection closed that was never opened".into()),
            },
            Event::Alias(id) => self.alias(id),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_keep_their_style_and_tag() {
        let docs =
            load("a: 200\nb: '200'\nc: !!binary |\n  aGk=\nd: null\ne: |+\n  x\n\n").unwrap();
        let doc = &docs[0];
        assert_eq!(doc.get("a").and_then(Node::as_u64), Some(200));
        assert_eq!(doc.get("b").and_then(Node::as_u64), None);
        assert_eq!(doc.get("b").and_then(Node::as_str), Some("200"));
        let Some(Node::Scalar(binary)) = doc.get("c") else {
            panic!("no c")
        };
        assert_eq!(binary.core_tag.as_deref(), Some("binary"));
        assert!(doc.get("d").is_some_and(Node::is_null));
        assert_eq!(doc.get("e").and_then(Node::as_str), Some("x\n\n"));
    }

    #[test]
    fn aliases_copy_and_are_bounded() {
        let docs = load("a: &x {k: [1, 2]}\nb: *x\n").unwrap();
        assert_eq!(docs[0].get("a"), docs[0].get("b"));
        let mut laughs = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (i, name) in ["b", "c", "d", "e", "f", "g", "h", "i", "j"]
            .iter()
            .enumerate()
        {
            let prev = ["a", "b", "c", "d", "e", "f", "g", "h", "i"][i];
            laughs.push_str(&format!(
                "{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
        }
        let error = load(&laughs).unwrap_err();
        assert!(error.contains("aliases expand past the bound"), "{error}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        // Flow collections the parser itself refuses past its recursion limit.
        let flow = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        let error = load(&flow).unwrap_err();
        assert!(
            error.contains("not YAML: recursion limit exceeded"),
            "{error}"
        );
        // Block sequences on one line it does not: without the bound a 100,000-deep tree is
        // built (and dropped recursively, overflowing the stack).
        let block = format!("{}1\n", "- ".repeat(100_000));
        let error = load(&block).unwrap_err();
        assert!(error.contains("nested deeper than 256"), "{error}");
        let fine = format!("{}1{}", "[".repeat(50), "]".repeat(50));
        assert!(load(&fine).is_ok());
    }

    #[test]
    fn parsed_bodies_read_as_json() {
        let docs = load("x: {n: 1, f: 1.5, t: true, s: 'true', z: ~, l: [a]}").unwrap();
        let json = docs[0].get("x").unwrap().to_json();
        assert_eq!(
            json,
            serde_json::json!({"n": 1, "f": 1.5, "t": true, "s": "true", "z": null, "l": ["a"]})
        );
    }
}
