//! A conversation's tool catalog: `tools/list` pages gathered into one complete list.
//!
//! Input: each `tools/list` request (its `cursor`) and result page (`tools`, `nextCursor`,
//! `ttlMs`), in settlement order. Output: the last complete [`Listed`] catalog, with every
//! tool's `inputSchema` and `outputSchema` compiled through the shared [`SchemaCache`] (so a
//! thousand sessions of one server share one compiled catalog, and the cache's compile and
//! step budgets apply). A walk is complete only after a page without `nextCursor`; a walk over
//! `max_catalog_bytes` is dropped and said (`catalog_too_large`), never judged from half.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::Unjudged;
use crate::engine::schema::{CompiledTools, Declaration, SchemaCache, ToolReading};

/// `inputSchema` of each listed tool, as the schema cache reads a catalog.
pub const INPUT_SCHEMAS: ToolReading = ToolReading {
    key_prefix: "mcp.input:",
    tool: |tool, at| declaration(tool, at, "inputSchema"),
    grammars: None,
};

/// `outputSchema` of each listed tool (absent for most).
pub const OUTPUT_SCHEMAS: ToolReading = ToolReading {
    key_prefix: "mcp.output:",
    tool: |tool, at| declaration(tool, at, "outputSchema"),
    grammars: None,
};

fn declaration<'t>(tool: &'t Value, at: usize, field: &str) -> Option<Declaration<'t>> {
    Some(Declaration {
        name: tool.get("name")?.as_str()?,
        parameters_path: format!("/result/tools/{at}/{field}"),
        parameters: tool.get(field),
    })
}

/// One complete catalog.
#[derive(Debug)]
pub struct Listed {
    /// Each tool object as listed (bounded by `max_catalog_bytes` in all).
    pub tools: Vec<Value>,
    by_name: HashMap<String, usize>,
    pub inputs: Arc<CompiledTools>,
    pub outputs: Arc<CompiledTools>,
    /// When a positive `ttlMs` runs out (µs); `None` when it never does.
    pub expires_us: Option<u64>,
}

impl Listed {
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name).and_then(|&at| self.tools.get(at))
    }
}

/// A listing walk in progress.
#[derive(Debug, Default)]
struct Walk {
    tools: Vec<Value>,
    bytes: usize,
    cursors: HashSet<String>,
    over: bool,
}

/// What a page did, for the rules.
#[derive(Debug, Default)]
pub struct PageFacts {
    /// A `nextCursor` this walk already gave.
    pub cursor_repeated: Option<String>,
    /// Names listed twice in the catalog this page completed.
    pub duplicates: Vec<String>,
    /// The walk went past `max_catalog_bytes` on this page.
    pub cut: bool,
}

#[derive(Debug, Default)]
pub struct Catalog {
    walk: Option<Walk>,
    listed: Option<Arc<Listed>>,
    /// Why there is no catalog to judge by, when there is none.
    missing: Option<Unjudged>,
}

impl Catalog {
    /// The catalog to judge a call settled at `now_us` by, or why there is none.
    pub fn judge_by(&self, now_us: u64) -> Result<&Arc<Listed>, Unjudged> {
        match &self.listed {
            Some(listed) if listed.expires_us.is_none_or(|at| now_us < at) => Ok(listed),
            Some(_) => Err(Unjudged::CatalogExpired),
            None => Err(self.missing.unwrap_or(Unjudged::NoCatalog)),
        }
    }

    /// Forgets the catalog (`list_changed`, a new `initialize`).
    pub fn invalidate(&mut self) {
        *self = Catalog::default();
    }

    /// Gives up the walk in progress and the catalog: the next calls are unjudged for `why`.
    pub fn drop_walk(&mut self, why: Unjudged) {
        self.walk = None;
        self.listed = None;
        self.missing = Some(why);
    }

    /// Takes one page: `cursor` is the request's, `result` the answer's.
    pub fn page(
        &mut self,
        cursor: Option<&str>,
        result: &Value,
        now_us: u64,
        max_bytes: usize,
        schemas: &SchemaCache,
    ) -> PageFacts {
        let mut facts = PageFacts::default();
        let Some(walk) = self.walk_for(cursor) else {
            // A later page of a walk tooltap did not see begin (started mid-listing).
            return facts;
        };
        let tools = result.get("tools").and_then(Value::as_array);
        for tool in tools.into_iter().flatten() {
            if walk.over {
                break;
            }
            let size = tool.to_string().len();
            if walk.bytes + size > max_bytes {
                walk.over = true;
                walk.tools = Vec::new();
                facts.cut = true;
            } else {
                walk.bytes += size;
                walk.tools.push(tool.clone());
            }
        }
        match result.get("nextCursor") {
            Some(Value::String(next)) => {
                if !walk.cursors.insert(next.clone()) {
                    facts.cursor_repeated = Some(next.clone());
                    self.walk = None;
                }
            }
            _ => self.complete(result, now_us, schemas, &mut facts),
        }
        facts
    }

    /// The walk a page with this request cursor continues: a new one without a cursor.
    fn walk_for(&mut self, cursor: Option<&str>) -> Option<&mut Walk> {
        match cursor {
            None => {
                self.walk = Some(Walk::default());
            }
            Some(cursor) => {
                if !self.walk.as_ref()?.cursors.contains(cursor) {
                    self.walk = None;
                    return None;
                }
            }
        }
        self.walk.as_mut()
    }

    fn complete(
        &mut self,
        result: &Value,
        now_us: u64,
        schemas: &SchemaCache,
        facts: &mut PageFacts,
    ) {
        let Some(walk) = self.walk.take() else {
            return;
        };
        if walk.over {
            self.listed = None;
            self.missing = Some(Unjudged::CatalogTooLarge);
            return;
        }
        let mut by_name = HashMap::with_capacity(walk.tools.len());
        for (at, tool) in walk.tools.iter().enumerate() {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if by_name.insert(name.to_owned(), at).is_some() {
                facts.duplicates.push(name.to_owned());
            }
        }
        let array = Value::Array(walk.tools);
        let inputs = schemas.tools_for(&array, &INPUT_SCHEMAS);
        let outputs = schemas.tools_for(&array, &OUTPUT_SCHEMAS);
        inputs.admit();
        outputs.admit();
        let Value::Array(tools) = array else {
            return;
        };
        self.listed = Some(Arc::new(Listed {
            tools,
            by_name,
            inputs,
            outputs,
            expires_us: expiry(result, now_us),
        }));
        self.missing = None;
    }
}

/// When a `ttlMs` makes a catalog stale. `ttlMs: 0` (what mcp 2.3.0 and FastMCP 4.2.3 send)
/// means "revalidate before reuse", not "unusable": the catalog stays the one to judge by
/// until a newer list replaces it (docs/rules.md, "MCP conversation state").
fn expiry(result: &Value, now_us: u64) -> Option<u64> {
    let ttl = result.get("ttlMs").and_then(Value::as_u64)?;
    (ttl > 0).then(|| now_us.saturating_add(ttl.saturating_mul(1000)))
}
