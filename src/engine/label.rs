//! The dialect label: which tool-calling API an exchange speaks, as users see it named.
//!
//! Input: a label (a config value, a recording's `dialect`, a `--dialect` flag) or a request
//! path. Output: a [`Dialect`]. A leaf: it imports nothing of the engine, so the report, the
//! seam and each dialect can name a dialect without importing one another; what a dialect does
//! is reached through the registration in `super::dialect` (`register`).

use serde::{Deserialize, Serialize};

/// The tool-calling API an exchange speaks; serialized as `"chat"`, `"responses"`,
/// `"anthropic"`, `"gemini"`, `"ollama"`, `"bedrock"` or `"mcp"`, the one label set users see (logs,
/// metrics, violations lines, recordings,
/// `check` output, quirk listings, the report). The labels the quirk listing and the report once
/// used, `chat_completions` and `anthropic_messages`, still read (see [`Dialect::from_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `POST .../chat/completions` (and what an old recording that names no dialect is: see
    /// [`Dialect::OLD_RECORDING`]).
    #[serde(alias = "chat_completions")]
    Chat,
    /// `POST .../responses`, the OpenAI Responses API.
    Responses,
    /// `POST .../messages`, the Anthropic Messages API.
    #[serde(alias = "anthropic_messages")]
    Anthropic,
    /// `POST .../models/{m}:generateContent` and `:streamGenerateContent`, the Google Gemini
    /// API (AI Studio and Vertex AI).
    Gemini,
    /// `POST .../api/chat`, Ollama's native chat API (NDJSON streams by default).
    Ollama,
    /// `POST .../model/{modelId}/converse` and `/converse-stream`, AWS Bedrock Converse (the
    /// model id percent-encoded as one path segment: ids, inference profiles, ARNs).
    Bedrock,
    /// The Model Context Protocol over Streamable HTTP (`POST`, `GET` and `DELETE` on one
    /// endpoint, by default a path ending in `/mcp`): JSON-RPC between an agent and a tool
    /// server.
    Mcp,
}

/// A dialect name that is none of [`Dialect::ALL`]'s labels (nor an old alias).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect {0:?}: the dialects are {names}", names = Dialect::NAMES)]
pub struct UnknownDialect(pub String);

impl Dialect {
    pub const ALL: [Dialect; 7] = [
        Dialect::Chat,
        Dialect::Responses,
        Dialect::Anthropic,
        Dialect::Gemini,
        Dialect::Ollama,
        Dialect::Bedrock,
        Dialect::Mcp,
    ];

    /// The stable label used in logs, metrics, violations lines and recordings.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Responses => "responses",
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
            Dialect::Ollama => "ollama",
            Dialect::Bedrock => "bedrock",
            Dialect::Mcp => "mcp",
        }
    }

    /// The labels, for messages that list them.
    pub const NAMES: &'static str = "chat, responses, anthropic, gemini, ollama, bedrock, mcp";

    /// Labels the quirk listing and the report used before they took [`Dialect::as_str`]'s:
    /// still read wherever a dialect is named (a recording, a config value, a report link).
    pub const OLD_NAMES: [(&'static str, Dialect); 2] = [
        ("chat_completions", Dialect::Chat),
        ("anthropic_messages", Dialect::Anthropic),
    ];

    /// The dialect a label names: its [`Dialect::as_str`], or one of [`Dialect::OLD_NAMES`].
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .into_iter()
            .find(|dialect| dialect.as_str() == name)
            .or_else(|| {
                Dialect::OLD_NAMES
                    .into_iter()
                    .find_map(|(old, dialect)| (old == name).then_some(dialect))
            })
    }

    /// The path suffixes that select this dialect: the one list of them (the default
    /// `inspect.path_suffixes`, the report and the proxy all read it). Gemini's are its two
    /// method names, after `models/{m}` under any prefix (AI Studio `/v1beta/models/{m}`,
    /// `/v1/models/{m}`, Vertex `/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}`,
    /// express mode `/v1beta1/publishers/google/models/{m}`).
    pub fn path_suffixes(self) -> &'static [&'static str] {
        match self {
            Dialect::Chat => &["/chat/completions"],
            Dialect::Responses => &["/responses"],
            Dialect::Anthropic => &["/messages"],
            Dialect::Gemini => &[":generateContent", ":streamGenerateContent"],
            Dialect::Ollama => &["/api/chat"],
            Dialect::Bedrock => &["/converse", "/converse-stream"],
            Dialect::Mcp => &["/mcp"],
        }
    }

    /// Whether the dialect streams JSON documents one per line (Ollama's NDJSON, sent as
    /// `application/x-ndjson`), so that a body of JSON alone does not say whether it streamed:
    /// the request's `stream` flag decides, as it decided the server's answer (`tooltap check`
    /// sniffs no content type for such a capture).
    pub fn streams_json_lines(self) -> bool {
        match self {
            Dialect::Ollama => true,
            Dialect::Chat
            | Dialect::Responses
            | Dialect::Anthropic
            | Dialect::Gemini
            | Dialect::Bedrock
            | Dialect::Mcp => false,
        }
    }

    /// Whether `path` (query and trailing `/` gone) is this dialect's: one of its suffixes,
    /// and for Bedrock that suffix right after `/model/{modelId}` (one raw segment: an ARN is
    /// percent-encoded), under any prefix.
    fn names(self, path: &str) -> bool {
        self.path_suffixes().iter().any(|suffix| {
            let Some(rest) = path.strip_suffix(suffix) else {
                return false;
            };
            if self != Dialect::Bedrock {
                return true;
            }
            rest.rsplit_once('/')
                .is_some_and(|(before, id)| !id.is_empty() && before.ends_with("/model"))
        })
    }

    /// The dialect a request path names (query string and trailing `/` ignored), if any.
    pub fn from_path(path: &str) -> Option<Dialect> {
        let path = path.split('?').next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        Dialect::ALL.into_iter().find(|dialect| dialect.names(path))
    }

    /// What an old recording (or a capture) that names no dialect and whose path names none
    /// was judged as: Chat Completions, tooltap's only dialect when such recordings were made.
    pub const OLD_RECORDING: Dialect = Dialect::Chat;

    /// The dialect of an old recording or a capture that names none: the one its path names,
    /// else [`Dialect::OLD_RECORDING`]. The one fallback `record::format::Meta::dialect` and
    /// `check`'s captures share; live traffic decides with [`Dialect::from_path`] and the
    /// route's `dialect` instead, and reports a path no dialect names.
    pub fn for_path(path: &str) -> Dialect {
        Dialect::from_path(path).unwrap_or(Dialect::OLD_RECORDING)
    }
}

impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(name: &str) -> Result<Dialect, UnknownDialect> {
        Dialect::from_name(name.trim()).ok_or_else(|| UnknownDialect(name.to_owned()))
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_and_old_spellings_still_read() {
        for dialect in Dialect::ALL {
            assert_eq!(dialect.as_str().parse::<Dialect>(), Ok(dialect));
            let json = serde_json::to_string(&dialect).expect("serialize");
            assert_eq!(json, format!("\"{}\"", dialect.as_str()));
            assert!(Dialect::NAMES.contains(dialect.as_str()));
        }
        assert_eq!(Dialect::from_name("chat_completions"), Some(Dialect::Chat));
        assert_eq!(
            Dialect::from_name("anthropic_messages"),
            Some(Dialect::Anthropic)
        );
        let old: Dialect = serde_json::from_str("\"chat_completions\"").expect("alias");
        assert_eq!(old, Dialect::Chat);
        let old: Dialect = serde_json::from_str("\"anthropic_messages\"").expect("alias");
        assert_eq!(old, Dialect::Anthropic);
        let unknown = "cohere".parse::<Dialect>().expect_err("not a dialect");
        assert_eq!(
            unknown.to_string(),
            format!(
                "unknown dialect \"cohere\": the dialects are {}",
                Dialect::NAMES
            )
        );
    }

    #[test]
    fn paths_name_dialects_by_their_one_suffix_list() {
        assert_eq!(
            Dialect::from_path("/v1/chat/completions?x=1"),
            Some(Dialect::Chat)
        );
        assert_eq!(
            Dialect::from_path("/openai/v1/responses/"),
            Some(Dialect::Responses)
        );
        assert_eq!(
            Dialect::from_path("/anthropic/v1/messages"),
            Some(Dialect::Anthropic)
        );
        for gemini in [
            "/v1beta/models/gemini-3-flash:generateContent",
            "/v1/models/gemini-3-flash:streamGenerateContent?alt=sse&key=k",
            "/v1beta/tunedModels/t:generateContent",
            "/v1beta1/projects/p/locations/us-central1/publishers/google/models/m:streamGenerateContent",
            "/v1beta1/publishers/google/models/gemini-3-flash:generateContent?alt=sse",
        ] {
            assert_eq!(
                Dialect::from_path(gemini),
                Some(Dialect::Gemini),
                "{gemini}"
            );
        }
        assert_eq!(
            Dialect::from_path("/v1beta/models/m:countTokens"),
            None,
            "only the two generate methods are Gemini's"
        );
        assert_eq!(Dialect::from_path("/api/chat"), Some(Dialect::Ollama));
        assert_eq!(
            Dialect::from_path("/ollama/api/chat/"),
            Some(Dialect::Ollama)
        );
        assert_eq!(Dialect::from_path("/api/generate"), None, "no tools there");
        for bedrock in [
            "/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse",
            "/model/m/converse-stream",
            "/bedrock/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x/converse",
        ] {
            assert_eq!(
                Dialect::from_path(bedrock),
                Some(Dialect::Bedrock),
                "{bedrock}"
            );
        }
        for not_bedrock in [
            "/converse",
            "/v1/converse",
            "/model//converse",
            "/model/m/invoke",
        ] {
            assert_eq!(Dialect::from_path(not_bedrock), None, "{not_bedrock}");
        }
        assert_eq!(Dialect::from_path("/mcp"), Some(Dialect::Mcp));
        assert_eq!(Dialect::from_path("/tools/mcp/?x=1"), Some(Dialect::Mcp));
        assert_eq!(Dialect::from_path("/notmcp"), None, "a whole segment");
        assert_eq!(Dialect::from_path("/v1/generate"), None);
        assert_eq!(Dialect::for_path("/v1/generate"), Dialect::Chat);
    }
}
