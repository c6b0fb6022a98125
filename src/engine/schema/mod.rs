//! Compiles the JSON Schemas a request declares, once per distinct `tools` array.
//!
//! Input: a request's declarations array and the dialect's [`ToolReading`] of it. Output: shared
//! [`CompiledTools`] that each dialect's argument checks validate against.
//! Validators are built offline: a `$ref` to a URL or a file is never fetched, it makes the
//! schema invalid (reported as `request.schema_invalid`), so a client cannot make tooltap read
//! files or open connections. This is the one module that imports `jsonschema`.

use std::any::Any;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use foldhash::fast::RandomState;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{PatternOptions, ValidationError, Validator};
use serde_json::Value;
use serde_json::value::RawValue;

use super::custom_input::{Grammars, RegexGrammar, regex_definition};
use super::schema_cost::{self, OverBudget};
use super::schema_plain::PlainCount;

pub mod plan;
pub mod stream;

pub use plan::StreamPlan;
pub use stream::{StreamCheck, StreamVerdict};

/// How many distinct `tools` arrays stay compiled; the oldest is evicted first.
const DEFAULT_CAPACITY: usize = 256;
/// Compiled validators take many times the bytes of their schema text (see
/// docs/benchmarks.md#schema-weight); entries are weighed at this many times their text.
pub const BYTES_PER_SCHEMA_BYTE: usize = 16;
/// Backtracking steps one `pattern` match may take before it counts as over budget.
const BACKTRACK_LIMIT: usize = 100_000;
/// Largest compiled size of one `pattern` regex.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// What one exchange's schema work may cost; shared by every exchange through the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    /// Estimated validation steps per tool call's arguments ([`schema_cost`]); past it the
    /// call's schema check is skipped and the exchange reported `schema_budget`.
    pub max_steps: u64,
    /// Schema text compiled per `tools` array; the tools past it are not compiled.
    pub max_compile_bytes: usize,
    /// Estimated bytes all cached compiled `tools` arrays may hold together.
    pub max_cache_bytes: usize,
    /// Heap bytes the custom tools' `regex` grammars of one `tools` array may compile to; the
    /// grammars past it are not compiled ([`crate::engine::custom_input`]).
    pub max_grammar_bytes: usize,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        SchemaLimits {
            max_steps: 200_000,
            max_compile_bytes: 4 * 1024 * 1024,
            max_cache_bytes: 128 * 1024 * 1024,
            max_grammar_bytes: 8 * 1024 * 1024,
        }
    }
}

thread_local! {
    /// Set while [`SchemaCache::lookup_only`] or [`SchemaCache::observing`] runs on this
    /// thread, with whether a miss compiles (the latter).
    static LOOKUP: Cell<Option<(LookupFacts, bool)>> = const { Cell::new(None) };
}

/// A lookup that found (or compiled) `found`, noted in this thread's lookup facts: whether every
/// array found is plain.
fn note_found(found: &CompiledTools) {
    note_lookup(|facts| LookupFacts {
        plain: facts.plain && found.plain,
        ..facts
    });
}

/// Updates this thread's lookup facts when [`SchemaCache::lookup_only`] or
/// [`SchemaCache::observing`] runs; nothing otherwise.
fn note_lookup(update: impl FnOnce(LookupFacts) -> LookupFacts) {
    LOOKUP.with(|lookup| {
        if let Some((facts, compiles)) = lookup.get() {
            lookup.set(Some((update(facts), compiles)));
        }
    });
}

/// What the schema lookups inside [`SchemaCache::lookup_only`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupFacts {
    /// Some array was not cached: nothing was compiled for it.
    pub missed: bool,
    /// Every array found (or, in [`SchemaCache::observing`], compiled) is
    /// [`CompiledTools::plain`].
    pub plain: bool,
}

/// Compiled validators keyed by the exact content of the `tools` array. `Send + Sync`; share it
/// across exchanges with an `Arc`. Bounded by count and by estimated bytes; an array enters
/// only when [`CompiledTools::admit`] is called (the inspector does on a 2xx head), so a request
/// that never gets an answer pins nothing.
#[derive(Debug)]
pub struct SchemaCache {
    limits: SchemaLimits,
    entries: Arc<Mutex<CacheEntries>>,
}

#[derive(Debug)]
struct CacheEntries {
    capacity: usize,
    max_bytes: usize,
    bytes: usize,
    by_key: HashMap<Arc<str>, Arc<CompiledTools>, RandomState>,
    insertion_order: VecDeque<Arc<str>>,
    /// The entries most recently handed out, newest first, at most [`RECENT`]; each is also in
    /// `by_key` (an evicted entry leaves both). See [`SchemaCache::known_at`].
    recent: VecDeque<Arc<CompiledTools>>,
}

/// How many recently used arrays [`SchemaCache::known_at`] compares a request's text with.
const RECENT: usize = 4;

impl Default for SchemaCache {
    fn default() -> Self {
        SchemaCache::with_capacity(DEFAULT_CAPACITY)
    }
}

impl SchemaCache {
    /// A cache holding at most `capacity` (at least 1) distinct tools arrays.
    pub fn with_capacity(capacity: usize) -> SchemaCache {
        SchemaCache::new(capacity, SchemaLimits::default())
    }

    /// A cache with these limits.
    pub fn new(capacity: usize, limits: SchemaLimits) -> SchemaCache {
        SchemaCache {
            limits,
            entries: Arc::new(Mutex::new(CacheEntries {
                capacity: capacity.max(1),
                max_bytes: limits.max_cache_bytes,
                bytes: 0,
                by_key: HashMap::default(),
                insertion_order: VecDeque::new(),
                recent: VecDeque::with_capacity(RECENT),
            })),
        }
    }

    pub fn limits(&self) -> SchemaLimits {
        self.limits
    }

    /// Another handle on the same cache (same entries, same limits): for a dialect whose tools
    /// arrive in a response (MCP's `tools/list`), which compiles them after its start.
    pub fn handle(&self) -> SchemaCache {
        SchemaCache {
            limits: self.limits,
            entries: Arc::clone(&self.entries),
        }
    }

    /// The compiled form of `tools` read by `reading`, compiling it on first sight, cached at
    /// once.
    pub fn tools_for(&self, tools: &Value, reading: &ToolReading) -> Arc<CompiledTools> {
        // serde_json serializes a `Value` deterministically, so equal content gives equal keys.
        let text = tools.to_string();
        let compiled = self.tools_for_key(&reading.key(&text), &text, reading);
        compiled.admit();
        compiled
    }

    /// The same for a declarations array exactly as the request carried it: the key is its
    /// text (after the reading's prefix), and the array is parsed only on a miss. (Building the
    /// key from a parsed `Value` on every request showed in the benchmark's profile.) The same
    /// array sent with other whitespace is compiled once more, never confused with another. Not
    /// cached until admitted.
    pub fn tools_for_raw(&self, tools: &RawValue, reading: &ToolReading) -> Arc<CompiledTools> {
        self.tools_for_text(tools.get(), reading)
    }

    /// As [`SchemaCache::tools_for_raw`], for an array's exact text read and checked as JSON by
    /// the caller.
    pub fn tools_for_text(&self, text: &str, reading: &ToolReading) -> Arc<CompiledTools> {
        self.tools_for_key(&reading.key(text), text, reading)
    }

    /// Keeping the full text as the key (not a hash) rules out collisions handing out wrong
    /// validators. Compilation happens outside the lock. Inside [`SchemaCache::lookup_only`] a
    /// miss compiles nothing: it is noted, and an array that declares nothing stands in.
    fn tools_for_key(&self, key: &str, text: &str, reading: &ToolReading) -> Arc<CompiledTools> {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(found) = entries.by_key.get(key).map(Arc::clone)
        {
            note_found(&found);
            entries.used(&found);
            return found;
        }
        if LOOKUP
            .with(Cell::get)
            .is_some_and(|(_, compiles)| !compiles)
        {
            note_lookup(|facts| LookupFacts {
                missed: true,
                ..facts
            });
            return Arc::new(CompiledTools::compile(&Value::Null, &self.limits, reading));
        }
        let value = serde_json::from_str(text).unwrap_or(Value::Null);
        let mut compiled = CompiledTools::compile(&value, &self.limits, reading);
        compiled.key = Arc::from(key);
        compiled.mentions_custom = text.contains("custom");
        compiled.home = Arc::downgrade(&self.entries);
        note_found(&compiled);
        Arc::new(compiled)
    }

    /// A cached array whose exact text `rest` starts with, among the [`RECENT`] arrays handed
    /// out last for `reading`: the array a request's scan is at, found without reading it.
    /// Agents send the same `tools` with every turn, and reading a large array (every string
    /// and number checked) cost more than anything else in a request's start
    /// (docs/benchmarks.md#known-tools). A cached text was read whole as JSON when it was
    /// compiled, and an array's text ends where its brackets close, so the value at `rest` is
    /// exactly that text: the same compiled tools [`SchemaCache::tools_for_text`] would hand
    /// out, and its length.
    pub fn known_at(
        &self,
        rest: &str,
        reading: &ToolReading,
    ) -> Option<(usize, Arc<CompiledTools>)> {
        if !rest.starts_with('[') {
            return None;
        }
        let mut entries = self.entries.lock().ok()?;
        let found = entries.recent.iter().find_map(|entry| {
            let text = entry.key.strip_prefix(reading.key_prefix)?;
            (text.starts_with('[') && rest.as_bytes().starts_with(text.as_bytes()))
                .then(|| (text.len(), Arc::clone(entry)))
        })?;
        note_found(&found.1);
        entries.used(&found.1);
        Some(found)
    }

    /// Runs `work` (an exchange's start) with this thread's schema lookups in lookup-only mode:
    /// a cached array is handed out as usual, a miss compiles nothing. The facts say whether
    /// any lookup missed (then what `work` built must be thrown away and built again outside,
    /// where the miss compiles) and whether every array found is plain. For the inspector,
    /// which starts a small exchange on its own thread only when no compilation is needed.
    pub fn lookup_only<T>(work: impl FnOnce() -> T) -> (T, LookupFacts) {
        Self::scoped(false, work)
    }

    /// Runs `work` (an exchange's start, on the analysis pool) with misses compiled as usual,
    /// noting whether every array it found or compiled is plain: whether the started
    /// exchange's later small trips may run on the inspector's own thread.
    pub fn observing<T>(work: impl FnOnce() -> T) -> (T, bool) {
        let (result, facts) = Self::scoped(true, work);
        (result, facts.plain)
    }

    fn scoped<T>(compiles: bool, work: impl FnOnce() -> T) -> (T, LookupFacts) {
        /// Leaves the mode however `work` ends, a panic included: a thread left in lookup-only
        /// mode would never compile again.
        struct Scope;
        impl Drop for Scope {
            fn drop(&mut self) {
                LOOKUP.with(|lookup| lookup.set(None));
            }
        }
        let start = LookupFacts {
            missed: false,
            plain: true,
        };
        LOOKUP.with(|lookup| lookup.set(Some((start, compiles))));
        let scope = Scope;
        let result = work();
        let facts = LOOKUP.with(Cell::get).map_or(
            LookupFacts {
                missed: true,
                plain: false,
            },
            |(facts, _)| facts,
        );
        drop(scope);
        (result, facts)
    }

    /// How many distinct tools arrays are compiled right now.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .map(|entries| entries.by_key.len())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Estimated bytes the cached entries hold (the `tooltap_schema_cache_bytes` gauge).
    pub fn bytes(&self) -> usize {
        self.entries
            .lock()
            .map(|entries| entries.bytes)
            .unwrap_or(0)
    }
}

impl CacheEntries {
    /// Inserts `compiled`, evicting the oldest until both bounds hold. An entry heavier than
    /// the whole byte bound is not kept.
    fn insert(&mut self, compiled: &Arc<CompiledTools>) {
        let weight = compiled.weight();
        if weight > self.max_bytes || self.by_key.contains_key(&compiled.key) {
            return;
        }
        while self.by_key.len() >= self.capacity || self.bytes + weight > self.max_bytes {
            let Some(oldest) = self.insertion_order.pop_front() else {
                break;
            };
            if let Some(gone) = self.by_key.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(gone.weight());
                self.recent.retain(|entry| !Arc::ptr_eq(entry, &gone));
            }
        }
        self.insertion_order.push_back(Arc::clone(&compiled.key));
        self.by_key
            .insert(Arc::clone(&compiled.key), Arc::clone(compiled));
        self.bytes += weight;
        self.used(compiled);
    }

    /// `entry` (one of `by_key`'s) handed out: first in the recent list.
    fn used(&mut self, entry: &Arc<CompiledTools>) {
        if self
            .recent
            .front()
            .is_some_and(|first| Arc::ptr_eq(first, entry))
        {
            return;
        }
        self.recent.retain(|other| !Arc::ptr_eq(other, entry));
        if self.recent.len() == RECENT {
            self.recent.pop_back();
        }
        self.recent.push_front(Arc::clone(entry));
    }
}

/// How a dialect's declarations array names its function tools: what a dialect hands the cache
/// with each array (each dialect keeps its own as a constant beside its request reading), so
/// that the cache compiles any dialect's tools without knowing one.
#[derive(Debug, Clone, Copy)]
pub struct ToolReading {
    /// Put before the array's text in the cache key, keeping readings' arrays apart (one
    /// reading may use `""`).
    pub key_prefix: &'static str,
    /// One array item at its position: the function tool it declares, `None` for an item
    /// that declares none (another kind of tool, no name).
    pub tool: fn(&Value, usize) -> Option<Declaration<'_>>,
    /// Where the array's custom tools keep a `regex` grammar
    /// ([`crate::engine::custom_input::regex_definition`]: `Some(true)` nested, `Some(false)`
    /// flat), or `None` when the reading has no custom tools.
    pub grammars: Option<bool>,
}

impl ToolReading {
    /// The cache key of an array of this reading.
    fn key<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        if self.key_prefix.is_empty() {
            std::borrow::Cow::Borrowed(text)
        } else {
            std::borrow::Cow::Owned(format!("{}{text}", self.key_prefix))
        }
    }
}

/// One function tool as a [`ToolReading`] finds it in its array.
#[derive(Debug)]
pub struct Declaration<'t> {
    pub name: &'t str,
    /// JSON pointer to its parameters schema in the request body.
    pub parameters_path: String,
    pub parameters: Option<&'t Value>,
}

/// The declared function tools of one request, with their argument validators.
#[derive(Debug)]
pub struct CompiledTools {
    tools: Vec<DeclaredTool>,
    /// Whether `tools` was a non-empty array (an empty one declares nothing).
    declares: bool,
    key: Arc<str>,
    home: Weak<Mutex<CacheEntries>>,
    /// Offered to the cache once already: every later 2xx answer for the same array (the
    /// common case, a cached array) skips the cache's lock and a hash of its key.
    admitted: AtomicBool,
    /// Position of each tool by name (the first one of a repeated name).
    by_name: HashMap<String, usize, RandomState>,
    /// Every tool's schema is plain ([`super::schema_plain`]) and no grammar was compiled:
    /// checks cost in proportion to the arguments.
    plain: bool,
    /// The custom tools' `regex` grammars, compiled with the schemas (so once per distinct
    /// array, on the analysis pool, and cached with it).
    grammars: Grammars,
    /// The array's text holds the word `custom` (see [`CompiledTools::mentions_custom`]).
    mentions_custom: bool,
    /// What a dialect read of the array besides its schemas ([`CompiledTools::keep_reading`]).
    reading: OnceLock<Box<dyn Any + Send + Sync>>,
}

/// One declared function tool.
#[derive(Debug)]
pub struct DeclaredTool {
    pub name: String,
    /// JSON pointer to the tool's `parameters` in the request body.
    pub parameters_path: String,
    pub schema: ToolSchema,
}

/// The state of one tool's `parameters` schema.
#[derive(Debug)]
pub enum ToolSchema {
    /// No `parameters`: an empty parameter list, nothing to validate against.
    Absent,
    Valid(Box<CheckedSchema>),
    /// Not a usable schema; the human reason. Arguments of this tool are not schema-checked.
    Invalid(String),
    /// Not compiled: the `tools` array's schemas went past `inspect.schema_compile_bytes`, or a
    /// `pattern` in it needs a backtracking engine (see `compile_one`).
    OverBudget,
}

/// A compiled schema with its source, which the cost estimate walks before validating.
#[derive(Debug)]
pub struct CheckedSchema {
    validator: Validator,
    source: Value,
    max_steps: u64,
    /// Laid out for streamed arguments on first need ([`ToolSchema::stream_plan`]).
    plan: OnceLock<Arc<StreamPlan>>,
}

/// What checking one call's arguments against its tool's schema gave.
#[derive(Debug)]
pub enum SchemaCheck {
    /// No schema to check against (absent or invalid).
    Unchecked,
    /// The schema's failures (empty when valid), at most the number asked for.
    Checked(Vec<SchemaFailure>),
    /// Checking would cost more than the budget: not attempted, or stopped.
    OverBudget,
}

/// One schema failure of the arguments.
#[derive(Debug, Clone)]
pub struct SchemaFailure {
    pub instance_path: String,
    pub schema_path: String,
    pub message: String,
}

/// A `required` failure for a property the object has: jsonschema 0.61's fused
/// `additionalProperties: false` + one-name `required` validator reports the name missing when
/// the object has it but `properties` does not declare it (the object's real failure,
/// `additionalProperties`, is reported beside it). Dropped, so the whole-document verdict is the
/// specification's, as the streaming checker's is.
fn names_a_present_property(error: &ValidationError<'_>) -> bool {
    let ValidationErrorKind::Required { property } = error.kind() else {
        return false;
    };
    match (property, error.instance().as_ref()) {
        (Value::String(name), Value::Object(object)) => object.contains_key(name),
        _ => false,
    }
}

impl ToolSchema {
    /// Validates `instance` within the step budget; at most `max_errors` failures are listed.
    pub fn check(&self, instance: &Value, max_errors: usize) -> SchemaCheck {
        let checked = match self {
            ToolSchema::Absent | ToolSchema::Invalid(_) => return SchemaCheck::Unchecked,
            ToolSchema::OverBudget => return SchemaCheck::OverBudget,
            ToolSchema::Valid(checked) => checked,
        };
        if let Err(OverBudget) = schema_cost::estimate(&checked.source, instance, checked.max_steps)
        {
            return SchemaCheck::OverBudget;
        }
        let mut failures = Vec::new();
        let errors = checked
            .validator
            .iter_errors(instance)
            .filter(|error| !names_a_present_property(error));
        for error in errors.take(max_errors) {
            // A regex that hit its backtracking limit is our bound, not the arguments' fault.
            if let ValidationErrorKind::BacktrackLimitExceeded { .. } = error.kind() {
                return SchemaCheck::OverBudget;
            }
            failures.push(SchemaFailure {
                instance_path: error.instance_path().as_str().to_owned(),
                schema_path: error.schema_path().as_str().to_owned(),
                message: error.to_string(),
            });
        }
        SchemaCheck::Checked(failures)
    }

    /// The schema laid out for arguments judged as they stream ([`StreamCheck`]), built on
    /// first need and kept; `None` when there is no schema to check against.
    pub fn stream_plan(&self) -> Option<Arc<StreamPlan>> {
        let ToolSchema::Valid(checked) = self else {
            return None;
        };
        let plan = checked.plan.get_or_init(|| {
            Arc::new(StreamPlan::new(&checked.source, &|alone| {
                linear_validator(alone).ok()
            }))
        });
        Some(Arc::clone(plan))
    }
}

impl CompiledTools {
    fn compile(tools: &Value, limits: &SchemaLimits, reading: &ToolReading) -> CompiledTools {
        let items = tools.as_array().map(Vec::as_slice).unwrap_or_default();
        let declares = !items.is_empty();
        let mut compile_left = limits.max_compile_bytes;
        let mut plain_count = PlainCount::default();
        let mut plain = true;
        let tools = items
            .iter()
            .enumerate()
            .filter_map(|(position, tool)| {
                let Declaration {
                    name,
                    parameters_path,
                    parameters,
                } = (reading.tool)(tool, position)?;
                let name = name.to_owned();
                if let Some(parameters) = parameters {
                    plain = plain && plain_count.plain(parameters);
                }
                let schema = match parameters {
                    None | Some(Value::Null) => ToolSchema::Absent,
                    Some(parameters) => {
                        let size = parameters.to_string().len();
                        if size > compile_left {
                            compile_left = 0;
                            ToolSchema::OverBudget
                        } else {
                            compile_left -= size;
                            compile_one(parameters, limits.max_steps)
                        }
                    }
                };
                Some(DeclaredTool {
                    name,
                    parameters_path,
                    schema,
                })
            })
            .collect::<Vec<DeclaredTool>>();
        let grammars = match reading.grammars {
            Some(nested) => Grammars::compile(
                items
                    .iter()
                    .filter_map(|tool| regex_definition(tool, nested)),
                limits.max_grammar_bytes,
            ),
            None => Grammars::default(),
        };
        let plain = plain && !grammars.any();
        let mut by_name = HashMap::with_capacity_and_hasher(tools.len(), RandomState::default());
        for (at, tool) in tools.iter().enumerate() {
            by_name.entry(tool.name.clone()).or_insert(at);
        }
        CompiledTools {
            tools,
            declares,
            key: Arc::from(""),
            home: Weak::new(),
            admitted: AtomicBool::new(false),
            by_name,
            plain,
            grammars,
            mentions_custom: false,
            reading: OnceLock::new(),
        }
    }

    /// What [`CompiledTools::keep_reading`] kept of type `T`, if anything.
    pub fn reading<T: Any>(&self) -> Option<&T> {
        self.reading.get()?.downcast_ref()
    }

    /// Keeps `reading` for every later request that sends this array (the first one kept
    /// stays): what a dialect read of the array's text besides its schemas, which depends on
    /// nothing else, so that an agent's every turn does not read it again. It is not counted in
    /// the cache's bytes: a dialect keeps the tools' names (which the text holds too) and a few
    /// flags.
    pub fn keep_reading<T: Any + Send + Sync>(&self, reading: T) {
        // Another thread's reading of the same text, kept first, is the same.
        let _ = self.reading.set(Box::new(reading));
    }

    /// The compiled form of a custom tool's `regex` grammar (one this array does not declare,
    /// as in a stand-in array, is over budget).
    pub fn grammar(&self, definition: &str) -> RegexGrammar {
        self.grammars.get(definition)
    }

    /// Whether every tool's schema is plain: checking arguments costs in proportion to them.
    pub fn plain(&self) -> bool {
        self.plain
    }

    /// Keeps this array in the cache it was compiled for (called once its request got a 2xx
    /// answer). Does nothing when it was offered before (it is there, or was evicted since and
    /// is compiled again on its next miss) or the cache is gone.
    pub fn admit(self: &Arc<Self>) {
        if self.admitted.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Some(home) = self.home.upgrade()
            && let Ok(mut entries) = home.lock()
        {
            entries.insert(self);
        }
    }

    /// The estimated bytes this array holds once compiled: its schemas by their text, its
    /// grammars by what they measured.
    fn weight(&self) -> usize {
        self.key
            .len()
            .saturating_mul(BYTES_PER_SCHEMA_BYTE)
            .saturating_add(self.grammars.weight())
    }

    /// Whether the request declared tools at all (a non-empty `tools` array).
    pub fn declares(&self) -> bool {
        self.declares
    }

    /// Whether the array's text holds the word `custom`, so that it can declare a custom tool
    /// (Chat reads the array again only then); decided once, as the text is compiled.
    pub fn mentions_custom(&self) -> bool {
        self.mentions_custom
    }

    pub fn get(&self, name: &str) -> Option<&DeclaredTool> {
        self.by_name.get(name).and_then(|&at| self.tools.get(at))
    }

    pub fn iter(&self) -> impl Iterator<Item = &DeclaredTool> {
        self.tools.iter()
    }
}

/// Compiles a schema with `pattern`s on the linear-time `regex` engine: its matches cost in
/// proportion to the text (what [`schema_cost`] charges), where a backtracking engine's cost is
/// bounded only by its step limit per match, which a call of thousands of strings multiplies.
/// A schema that compiles only with backtracking (backreferences, lookaround) is valid but not
/// checked: [`ToolSchema::OverBudget`].
fn compile_one(parameters: &Value, max_steps: u64) -> ToolSchema {
    let error = match linear_validator(parameters) {
        Ok(validator) => {
            return ToolSchema::Valid(Box::new(CheckedSchema {
                validator,
                source: parameters.clone(),
                max_steps,
                plan: OnceLock::new(),
            }));
        }
        Err(error) => explain_invalid_schema(&error),
    };
    let backtracking = PatternOptions::fancy_regex()
        .backtrack_limit(BACKTRACK_LIMIT)
        .size_limit(REGEX_SIZE_LIMIT);
    match jsonschema::options()
        .offline()
        .with_pattern_options(backtracking)
        .build(parameters)
    {
        Ok(_) => ToolSchema::OverBudget,
        Err(_) => ToolSchema::Invalid(error),
    }
}

/// A tool schema compiled with no step budget, for the engine's unit tests.
#[cfg(test)]
pub(crate) fn compile_one_for_tests(parameters: &Value) -> ToolSchema {
    compile_one(parameters, u64::MAX)
}

/// A schema compiled offline with `pattern`s on the linear-time `regex` engine.
fn linear_validator(schema: &Value) -> Result<Validator, ValidationError<'_>> {
    let linear = PatternOptions::regex().size_limit(REGEX_SIZE_LIMIT);
    jsonschema::options()
        .offline()
        .with_pattern_options(linear)
        .build(schema)
}

/// jsonschema reports a bad schema with the error type of a bad instance (`"5" is not of type
/// "string"`), which reads as if the arguments were wrong. Say what is wrong with the schema.
fn explain_invalid_schema(error: &ValidationError<'_>) -> String {
    let location = match error.instance_path().as_str() {
        "" => "the schema root".to_owned(),
        path => format!("`{path}`"),
    };
    if let jsonschema::error::ValidationErrorKind::Referencing(reason) = error.kind() {
        return format!(
            "a $ref could not be resolved offline ({reason}); tooltap never fetches remote or file references"
        );
    }
    let mut found = error.instance().to_string();
    if found.len() > 80 {
        found.truncate(77);
        found.push_str("...");
    }
    format!(
        "not a valid JSON Schema: {found} at {location} breaks the meta-schema's `{}` rule",
        error.kind().keyword()
    )
}

#[cfg(test)]
mod tests;
