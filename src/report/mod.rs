//! `tooltap report`: one self-contained HTML file that shows recorded exchanges, re-judged.
//!
//! Input: [`ReportArgs`] (recording files and folders, read exactly as `tooltap check` reads
//! them: [`crate::interop::files::collect`], [`crate::interop::files::each_recording`] and
//! `check::checked::engine_report`; the MCP exchanges shown then go through `check`'s
//! conversation pass, `conversation_rules`). Output: an HTML file with inline CSS and script and
//! the data as JSON in a `<script type="application/json">` element (`html`); problems with
//! inputs on `stderr`. Exit code: 0 written, 2 usage errors, unreadable input (the file is
//! still written, listing them) or a file that could not be written.
//!
//! ```text
//! paths ─► interop::files::{collect, each_recording} ─► check::checked::engine_report ─┐
//!                                          └─► pieces (dialect tables) ────────────────┴─► model ─► html
//! ```

pub mod bound;
mod conversation_rules;
pub mod dialect;
mod html;
pub mod mcp;
pub mod model;
pub mod pieces;

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::check::checked;
use crate::check::conversations::Stamp;
use crate::engine::{EngineConfig, SchemaCache, SeverityOverrides};
use crate::interop::files::{self, DEFAULT_MAX_INPUT_BYTES, each_recording};
use crate::record::read::count_recordings;

pub use html::{render, write_page};

/// Exit code: the report was written and every input was read.
pub const EXIT_OK: u8 = 0;
/// Exit code: bad usage, an unreadable input, or the report could not be written.
pub const EXIT_USAGE: u8 = 2;

/// `tooltap report PATH... [-o FILE]`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Folders are walked recursively for *.jsonl recordings, as by `tooltap \
                        check`. The page needs no network: open it from disk in any browser."
)]
pub struct ReportArgs {
    /// Recording files, or folders walked recursively for *.jsonl (and vcrpy cassettes *.yaml,
    /// *.yml, *.yaml.gz and HAR files *.har, see docs/interop.md), or s3://bucket/prefix
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Where to write the page
    #[arg(
        long,
        short = 'o',
        value_name = "FILE",
        default_value = "tooltap-report.html"
    )]
    pub output: PathBuf,
    /// Per-rule severities, e.g. finish_reason.not_tool_calls=warning,delta.id_repeated=off
    #[arg(long, value_name = "RULE=LEVEL,...", value_parser = SeverityOverrides::parse_list)]
    pub severity: Option<SeverityOverrides>,
    /// Prefix of the rule documentation links (docs/rules.md#... is appended)
    #[arg(long, value_name = "URL", default_value = "")]
    pub docs_base: String,
    /// Most exchanges put in one page; the rest are counted, not shown
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub max_exchanges: usize,
    /// Most bytes of decoded text, and of raw frames, shown per exchange; the rest is marked
    /// "cut: N bytes not shown"
    #[arg(long, value_name = "BYTES", default_value_t = bound::DEFAULT_MAX_SHOWN_BYTES)]
    pub max_shown_bytes: usize,
    /// Most bytes of data in the page; past it exchanges are listed without their detail
    /// (fragments, frames, reassembled calls), then left out, and both are counted
    #[arg(long, value_name = "BYTES", default_value_t = bound::DEFAULT_MAX_PAGE_BYTES)]
    pub max_page_bytes: u64,
}

/// Everything the page is built from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReportData {
    pub generated_by: String,
    pub exchanges: Vec<model::ExchangeView>,
    /// The distinct `tools` lists the exchanges point into.
    pub tools: model::ToolTable,
    /// The distinct JSON pointers the fragments' pieces point into.
    pub pointers: model::ToolTable,
    /// Inputs that could not be read, with file and line.
    pub unreadable: Vec<String>,
    /// Notes on input files: skipped as holding no recording yet (a segment tooltap stopped as
    /// it began), or another tool's fixture imported (how its frame boundaries were made).
    pub skipped: Vec<String>,
    /// Recordings beyond `--max-exchanges`, not shown.
    pub omitted: usize,
    /// What the page budget (`--max-page-bytes`) and the per-exchange bounds left out.
    pub cut: PageCut,
    /// MCP conversations: catalogue, then calls on a timeline (none without MCP exchanges).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<mcp::ConversationView>,
    /// Old spellings a `#f=` link may hold, by filter: `{"dialect": {"chat_completions":
    /// "chat", ...}}`, so a link kept from an older page still selects its rows.
    pub filter_aliases: FilterAliases,
}

/// Filter name → old value → the value the page shows now.
pub type FilterAliases = std::collections::BTreeMap<
    &'static str,
    std::collections::BTreeMap<&'static str, &'static str>,
>;

/// The dialect labels the report showed before it took the engine's.
pub fn filter_aliases() -> FilterAliases {
    let dialects = crate::engine::Dialect::OLD_NAMES
        .into_iter()
        .map(|(old, dialect)| (old, dialect.as_str()))
        .collect();
    FilterAliases::from([("dialect", dialects)])
}

/// What one page does not show, counted.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PageCut {
    /// The budget: most bytes of exchange data in the page.
    pub budget: u64,
    /// Bytes of exchange data the page holds.
    pub used: u64,
    /// Exchanges listed without their detail, and the bytes that detail would have taken.
    pub without_detail: usize,
    pub detail_bytes: u64,
    /// Exchanges left out entirely once even their summary did not fit.
    pub left_out: usize,
    /// Bytes of decoded text and raw frames cut by `--max-shown-bytes`, all exchanges together.
    pub shown_bytes: u64,
    /// MCP exchanges shown whose conversation rules were not judged: holding every MCP
    /// observation until the conversation pass would have passed the page budget, or the
    /// budget left an MCP exchange out.
    pub conversations_unjudged: usize,
    /// The most bytes of MCP observations held at once for the conversation pass (charged to
    /// the budget while held, with the page's data).
    pub most_held: u64,
    /// Bytes of MCP observations held now.
    #[serde(skip)]
    held: u64,
}

/// Reads, re-judges and collects the exchanges under `args.paths`.
pub fn collect(args: &ReportArgs) -> ReportData {
    let (files, mut unreadable) = files::collect(&args.paths, DEFAULT_MAX_INPUT_BYTES);
    let mut engine = EngineConfig::default();
    if let Some(severity) = &args.severity {
        engine.severity = severity.clone();
    }
    let engine = std::sync::Arc::new(engine);
    let cache = std::sync::Arc::new(SchemaCache::default());
    let mut exchanges = Vec::with_capacity(files.len().min(args.max_exchanges));
    let mut tools = model::ToolTable::default();
    let mut pointers = model::ToolTable::default();
    let mut buffer = Vec::new();
    let mut skipped = Vec::new();
    let mut omitted = 0;
    let mut cut = PageCut {
        budget: args.max_page_bytes,
        ..PageCut::default()
    };
    let max_bytes = DEFAULT_MAX_INPUT_BYTES;
    let mut conversations = Vec::new();
    let mut waiting = conversation_rules::Waiting::default();
    // A segment file holds many exchanges: the bound counts exchanges, not files. Past it the
    // rest are only counted, by their exchange lines, not read.
    for file in &files {
        if exchanges.len() >= args.max_exchanges {
            omitted += count_recordings(file, max_bytes, &mut buffer);
            continue;
        }
        let read = each_recording(file, max_bytes, &mut buffer, |recording| {
            if exchanges.len() >= args.max_exchanges {
                omitted += 1;
                return;
            }
            match recording {
                Ok(recording) => {
                    let mut report = checked::engine_report(&recording, &engine, &cache);
                    let marks = Marks::of(&tools, &pointers);
                    let view = model::view(
                        &recording,
                        &report,
                        &args.docs_base,
                        args.max_shown_bytes,
                        &mut tools,
                        &mut pointers,
                    );
                    let conversation = (view.dialect == "mcp").then(|| {
                        let rules = view.violations.iter();
                        let errors = rules
                            .clone()
                            .filter(|v| v.violation.severity == crate::engine::Severity::Error)
                            .count();
                        let rules = rules.map(|v| v.violation.rule.as_str().to_owned());
                        (
                            mcp::Conversations::read(&recording, rules.collect(), errors),
                            Stamp::of(&recording),
                        )
                    });
                    // Only the observation waits for the conversation pass.
                    drop(recording);
                    let observation = report.mcp.take();
                    drop(report);
                    if let Some(view) = cut.fit(view, marks, &mut tools, &mut pointers) {
                        if let Some((entry, stamp)) = conversation {
                            let (at, entry_at) = (exchanges.len(), conversations.len());
                            waiting.add(at, stamp, observation, entry_at, &mut cut);
                            conversations.push(entry);
                        }
                        exchanges.push(view);
                    } else if conversation.is_some() {
                        waiting.left_out(&mut cut);
                    }
                }
                Err(error) => unreadable.push(error.to_string()),
            }
        });
        skipped.extend(read.note(file));
    }
    // The conversation rules, as `tooltap check` settles them, on the exchanges shown; the
    // observations held for them are let go as they settle.
    cut.held = 0;
    cut.used += waiting.settle(
        &mut exchanges,
        &mut conversations,
        &engine,
        &cache,
        &args.docs_base,
    );
    let mut gathered = mcp::Conversations::new(args.max_shown_bytes);
    conversations
        .into_iter()
        .for_each(|entry| gathered.push(entry));
    let mut conversations = gathered.finish();
    cut.used += mcp::fit(&mut conversations, cut.budget.saturating_sub(cut.used));
    ReportData {
        generated_by: format!("tooltap {}", env!("CARGO_PKG_VERSION")),
        exchanges,
        tools,
        pointers,
        unreadable,
        skipped,
        omitted,
        cut,
        mcp: conversations,
        filter_aliases: filter_aliases(),
    }
}

/// How far the tables reached before an exchange's view was built: what it added is past
/// these.
#[derive(Debug, Clone, Copy)]
struct Marks {
    tools: (usize, u64),
    pointers: (usize, u64),
}

impl Marks {
    fn of(tools: &model::ToolTable, pointers: &model::ToolTable) -> Marks {
        Marks {
            tools: (tools.len(), tools.bytes()),
            pointers: (pointers.len(), pointers.bytes()),
        }
    }
}

impl PageCut {
    /// The view as it fits what is left of the budget: whole, without its detail, or not at
    /// all (`None`); counted. The tool lists and pointers it added to the tables (`marks`) are
    /// charged with it, and taken out again with the detail (pointers) or the view (both).
    fn fit(
        &mut self,
        mut view: model::ExchangeView,
        marks: Marks,
        tools: &mut model::ToolTable,
        pointers: &mut model::ToolTable,
    ) -> Option<model::ExchangeView> {
        self.shown_bytes += view.cut.decoded_bytes + view.cut.raw_bytes;
        let new_tools = tools.bytes() - marks.tools.1;
        let new_pointers = pointers.bytes() - marks.pointers.1;
        let whole = bound::json_size(&view) + new_tools + new_pointers;
        let used = self.used + self.held;
        if used + whole <= self.budget {
            self.used += whole;
            return Some(view);
        }
        view.fragments = Vec::new();
        view.frames = Vec::new();
        view.choices = Vec::new();
        // Only fragments point into the pointer table.
        pointers.truncate(marks.pointers.0);
        view.cut.detail_bytes = whole;
        let summary = bound::json_size(&view) + new_tools;
        if used + summary <= self.budget {
            self.used += summary;
            self.without_detail += 1;
            self.detail_bytes += whole.saturating_sub(summary);
            return Some(view);
        }
        tools.truncate(marks.tools.0);
        self.left_out += 1;
        None
    }
}

/// Runs the command: collect, render, write.
pub fn run(args: &ReportArgs, stderr: &mut dyn Write) -> u8 {
    let data = collect(args);
    for message in &data.unreadable {
        let _ = writeln!(stderr, "tooltap report: {message}");
    }
    for note in &data.skipped {
        let _ = writeln!(stderr, "tooltap report: note: {note}");
    }
    let cut = &data.cut;
    if cut.without_detail + cut.left_out > 0 {
        let _ = writeln!(
            stderr,
            "tooltap report: the page budget (--max-page-bytes {}) was spent: {} exchanges \
             shown without their detail ({} bytes not shown), {} left out",
            cut.budget, cut.without_detail, cut.detail_bytes, cut.left_out
        );
    }
    if cut.shown_bytes > 0 {
        let _ = writeln!(
            stderr,
            "tooltap report: {} bytes of bodies and frames cut (--max-shown-bytes {} per \
             exchange)",
            cut.shown_bytes, args.max_shown_bytes
        );
    }
    if cut.conversations_unjudged > 0 {
        let _ = writeln!(
            stderr,
            "tooltap report: the page budget (--max-page-bytes {}) could not hold the MCP \
             exchanges' observations until the conversation pass: the conversation rules of {} \
             MCP exchanges were not judged",
            cut.budget, cut.conversations_unjudged
        );
    }
    if data.omitted > 0 {
        let _ = writeln!(
            stderr,
            "tooltap report: {} recordings beyond --max-exchanges {} are not shown",
            data.omitted, args.max_exchanges
        );
    }
    let written = std::fs::File::create(&args.output).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        html::write_page(&data, &mut out)?;
        out.flush()
    });
    if let Err(error) = written {
        let _ = writeln!(
            stderr,
            "tooltap report: cannot write {}: {error}",
            args.output.display()
        );
        return EXIT_USAGE;
    }
    let _ = writeln!(
        stderr,
        "tooltap report: {} exchanges written to {}",
        data.exchanges.len(),
        args.output.display()
    );
    if data.unreadable.is_empty() {
        EXIT_OK
    } else {
        EXIT_USAGE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example recordings with these bounds.
    fn examples(max_exchanges: usize, max_shown_bytes: usize, max_page_bytes: u64) -> ReportArgs {
        ReportArgs {
            paths: vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recordings/examples")],
            output: PathBuf::from("unused.html"),
            severity: None,
            docs_base: String::new(),
            max_exchanges,
            max_shown_bytes,
            max_page_bytes,
        }
    }

    #[test]
    fn exchanges_beyond_the_bound_are_counted_not_shown() {
        let args = examples(
            3,
            bound::DEFAULT_MAX_SHOWN_BYTES,
            bound::DEFAULT_MAX_PAGE_BYTES,
        );
        let data = collect(&args);
        assert_eq!((data.exchanges.len(), data.omitted), (3, 4));
        assert!(data.unreadable.is_empty());
        // Seven exchanges, one tool list between them: stored once.
        assert_eq!(data.tools.get(1), None);
    }

    #[test]
    fn past_the_page_budget_exchanges_lose_their_detail_then_are_left_out_and_counted() {
        let args = |max_page_bytes| examples(100, 64, max_page_bytes);
        let whole = collect(&args(bound::DEFAULT_MAX_PAGE_BYTES));
        assert_eq!((whole.exchanges.len(), whole.cut.without_detail), (7, 0));
        assert!(
            whole.cut.shown_bytes > 0,
            "64 bytes shown per exchange cut something"
        );
        assert!(whole.exchanges.iter().any(|x| x.cut.raw_bytes > 0));
        let budget = whole.cut.used / 2;
        let tight = collect(&args(budget));
        assert!(tight.cut.used <= budget);
        assert!(tight.cut.without_detail > 0 && tight.cut.detail_bytes > 0);
        let stripped = tight.exchanges.iter().filter(|x| x.cut.detail_bytes > 0);
        assert!(
            stripped
                .clone()
                .all(|x| x.fragments.is_empty() && x.frames.is_empty())
        );
        let none = collect(&args(10));
        assert_eq!((none.exchanges.len(), none.cut.left_out), (0, 7));
        // What the left-out exchanges added to the tables is taken out with them.
        assert!(none.tools.is_empty() && none.pointers.is_empty());
    }

    #[test]
    fn the_tool_lists_and_pointers_an_exchange_adds_are_charged_to_the_page_budget() {
        let args = |max_page_bytes| examples(100, bound::DEFAULT_MAX_SHOWN_BYTES, max_page_bytes);
        let data_bytes = |data: &ReportData| {
            data.exchanges.iter().map(bound::json_size).sum::<u64>()
                + data.tools.bytes()
                + data.pointers.bytes()
        };
        let whole = collect(&args(bound::DEFAULT_MAX_PAGE_BYTES));
        assert!(whole.tools.bytes() > 0 && whole.pointers.bytes() > 0);
        assert_eq!(whole.cut.used, data_bytes(&whole));
        // Each entry and its comma; the brackets take one byte more than the last comma.
        for table in [&whole.tools, &whole.pointers] {
            assert_eq!(table.bytes() + 1, bound::json_size(table));
        }
        for budget in [whole.cut.used / 2, whole.cut.used / 5] {
            let tight = collect(&args(budget));
            assert!(tight.cut.without_detail + tight.cut.left_out > 0);
            assert_eq!(tight.cut.used, data_bytes(&tight));
            assert!(tight.cut.used <= budget, "{} past {budget}", tight.cut.used);
        }
    }
}
