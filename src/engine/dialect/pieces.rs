//! Where tool-call pieces sit in a dialect's documents, as data: what the HTML report draws its
//! lanes from.
//!
//! Input: nothing; each dialect gives its [`DialectTables`] (`DialectRules::pieces`), reached
//! through the registration as `Dialect::pieces`. Output: [`PieceRule`]s telling the report which
//! JSON pointers of a stream event (or of a buffered body) hold content, a call id, a function
//! name or an argument piece, and which value names the lane (the tool-call index). A leaf: it
//! imports nothing of the engine.

/// What a piece of a fragment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PieceKind {
    Content,
    Id,
    Name,
    Arguments,
    Finish,
}

/// Which lane a matched item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The text-content lane.
    Content,
    /// The tool-call lane named by the integer at this pointer, relative to the matched item.
    Field(&'static str),
    /// The tool-call lane named by the matched item's position in its array (buffered bodies).
    Position,
    /// One fixed tool-call lane: a shape with one call and no index (Chat's legacy
    /// `function_call`).
    Fixed(&'static str),
}

/// One place pieces are found.
#[derive(Debug, Clone, Copy)]
pub struct PieceRule {
    /// Only documents whose top-level `type` equals this (event-typed dialects); `None`: all.
    pub when_type: Option<&'static str>,
    /// A JSON pointer to the items; `*` matches every element of an array. `""` is the root.
    pub items: &'static str,
    pub lane: Lane,
    /// `(kind, pointer relative to the item)` of every piece an item may hold.
    pub parts: &'static [(PieceKind, &'static str)],
}

/// One dialect's tables.
#[derive(Debug, Clone, Copy)]
pub struct DialectTables {
    /// Rules for one stream event's data payload.
    pub stream: &'static [PieceRule],
    /// Rules for a whole buffered body.
    pub buffered: &'static [PieceRule],
}
