//! Named routes: which upstream a request goes to, and the URI it is sent to there.
//!
//! Input: `[[routes]]` entries and the default upstream, validated by `config`. Output: for each
//! request path, the matching [`Route`] (its name travels with the exchange for logs and metrics)
//! and the rewritten upstream URI.
//!
//! Rules, worked through with route `groq` = prefix `/groq`, upstream
//! `https://api.groq.com/openai`:
//! * the longest matching prefix wins, and a prefix matches whole path segments only
//!   (`/groq` matches `/groq` and `/groq/v1`, never `/groqx`); the default route (prefix `/`)
//!   matches everything else;
//! * the route prefix is stripped and the rest is appended to the upstream's base path:
//!   `/groq/v1/chat/completions?x=1` → `https://api.groq.com/openai/v1/chat/completions?x=1`;
//! * the default route strips nothing: with `--upstream https://api.groq.com/openai`,
//!   `/v1/models` → `https://api.groq.com/openai/v1/models`.

use std::sync::Arc;

use http::Uri;
use http::uri::{Authority, Scheme};

/// Errors that quote an upstream URL quote it through [`shown`]: never its user-info or a
/// credential-named query value, since the message reaches stderr and logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("`{0}` is not a URL")]
    NotAUrl(String),
    #[error("`{0}`: only http:// and https:// upstreams are supported")]
    UnsupportedScheme(String),
    #[error("`{0}`: the upstream URL needs a host")]
    MissingHost(String),
    #[error("`{0}`: put credentials in headers, not in the upstream URL")]
    HasUserinfo(String),
    #[error("`{0}`: an upstream URL cannot carry a query string")]
    HasQuery(String),
    #[error("a route needs a non-empty name")]
    EmptyName,
    #[error("the route name `default` is reserved for --upstream")]
    ReservedName,
    #[error("prefix `{0}` must start with `/` and contain no `?` or `#`")]
    BadPrefix(String),
    #[error("prefix `/` belongs to the default route: set proxy.upstream (--upstream) instead")]
    RootPrefix,
    #[error("two routes are named `{0}`")]
    DuplicateName(String),
    #[error("two routes have the prefix `{0}`")]
    DuplicatePrefix(String),
}

/// `text` as an error may quote it: `https://user:sk-1@host/v1?key=sk-2` →
/// `https://[REDACTED]@host/v1?key=[REDACTED]`.
fn shown(text: &str) -> String {
    let mut redacted = Vec::new();
    let url = crate::redact::url(text, &mut redacted);
    if !redacted.iter().any(|entry| entry == "upstream:userinfo") {
        return url;
    }
    // Say where the credential was, without it.
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}@{rest}", crate::redact::REDACTED),
        None => format!("{}@{url}", crate::redact::REDACTED),
    }
}

/// A validated upstream base URL, e.g. `https://api.groq.com/openai`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamUrl {
    text: String,
    scheme: Scheme,
    authority: Authority,
    /// The authority as the `Host` header every request to it carries, made once.
    host: http::HeaderValue,
    /// Without a trailing slash; empty for a bare host.
    base_path: String,
}

impl UpstreamUrl {
    pub fn parse(text: &str) -> Result<UpstreamUrl, RouteError> {
        let trimmed = text.trim();
        let uri: Uri = trimmed
            .parse()
            .map_err(|_| RouteError::NotAUrl(shown(text)))?;
        let scheme = match uri.scheme_str() {
            Some("http") => Scheme::HTTP,
            Some("https") => Scheme::HTTPS,
            Some(_) => return Err(RouteError::UnsupportedScheme(shown(text))),
            None => return Err(RouteError::NotAUrl(shown(text))),
        };
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| RouteError::MissingHost(shown(text)))?;
        if authority.as_str().contains('@') {
            return Err(RouteError::HasUserinfo(shown(text)));
        }
        if authority.host().is_empty() {
            return Err(RouteError::MissingHost(shown(text)));
        }
        if uri.query().is_some() {
            return Err(RouteError::HasQuery(shown(text)));
        }
        let base_path = uri.path().trim_end_matches('/').to_owned();
        let host = http::HeaderValue::from_str(authority.as_str())
            .map_err(|_| RouteError::NotAUrl(shown(text)))?;
        Ok(UpstreamUrl {
            text: format!("{scheme}://{authority}{base_path}"),
            scheme,
            authority,
            host,
            base_path,
        })
    }

    /// The normalized URL, for logs and error messages.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the `Host` header (and h2 `:authority`) becomes.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The `Host` header value for requests to this upstream.
    pub fn host_header(&self) -> &http::HeaderValue {
        &self.host
    }

    pub fn is_https(&self) -> bool {
        self.scheme == Scheme::HTTPS
    }

    /// Join the base path with the rest of the client's path (already stripped of the route
    /// prefix; empty or starting with `/`), keeping the query untouched.
    pub fn target(&self, rest: &str, query: Option<&str>) -> Result<Uri, http::Error> {
        let mut path_and_query = String::with_capacity(self.base_path.len() + rest.len() + 1);
        path_and_query.push_str(&self.base_path);
        if !rest.is_empty() && !rest.starts_with('/') {
            path_and_query.push('/');
        }
        path_and_query.push_str(rest);
        if path_and_query.is_empty() {
            path_and_query.push('/');
        }
        if let Some(query) = query {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        self.with_path(path_and_query)
    }

    /// This upstream's absolute URI for `path_and_query` (already joined to the base path).
    fn with_path<P>(&self, path_and_query: P) -> Result<Uri, http::Error>
    where
        http::uri::PathAndQuery: TryFrom<P>,
        <http::uri::PathAndQuery as TryFrom<P>>::Error: Into<http::Error>,
    {
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path_and_query)
            .build()
    }
}

/// The name of the route that takes every path no `[[routes]]` prefix matches.
pub const DEFAULT_ROUTE: &str = "default";

/// One named route.
#[derive(Debug, Clone)]
pub struct Route {
    pub name: Arc<str>,
    /// `/` for the default route, otherwise without a trailing slash.
    pub prefix: String,
    pub upstream: UpstreamUrl,
}

impl Route {
    pub fn new(name: &str, prefix: &str, upstream: UpstreamUrl) -> Result<Route, RouteError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(RouteError::EmptyName);
        }
        if name == DEFAULT_ROUTE {
            return Err(RouteError::ReservedName);
        }
        if !prefix.starts_with('/') || prefix.contains(['?', '#']) {
            return Err(RouteError::BadPrefix(prefix.to_owned()));
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.is_empty() {
            return Err(RouteError::RootPrefix);
        }
        Ok(Route {
            name: Arc::from(name),
            prefix: prefix.to_owned(),
            upstream,
        })
    }

    fn default_route(upstream: UpstreamUrl) -> Route {
        Route {
            name: Arc::from(DEFAULT_ROUTE),
            prefix: "/".to_owned(),
            upstream,
        }
    }

    /// The upstream URI for a client request URI: prefix stripped, base path joined, query kept.
    pub fn target_uri(&self, client_uri: &Uri) -> Result<Uri, http::Error> {
        let path = client_uri.path();
        let rest = self.strip(path).unwrap_or(path);
        match client_uri.path_and_query() {
            // Nothing stripped and no base path to join (the default route to a bare host): the
            // client's path and query are the upstream's, already parsed, shared not copied.
            Some(unchanged)
                if rest.len() == path.len()
                    && rest.starts_with('/')
                    && self.upstream.base_path.is_empty() =>
            {
                self.upstream.with_path(unchanged.clone())
            }
            _ => self.upstream.target(rest, client_uri.query()),
        }
    }

    /// The part of `path` after this route's prefix, if the prefix matches whole segments.
    fn strip<'p>(&self, path: &'p str) -> Option<&'p str> {
        if self.prefix == "/" {
            return Some(path);
        }
        let rest = path.strip_prefix(self.prefix.as_str())?;
        (rest.is_empty() || rest.starts_with('/')).then_some(rest)
    }
}

/// All routes, longest prefix first, the default route last (so it always matches).
#[derive(Debug, Clone)]
pub struct RouteTable {
    routes: Vec<Route>,
}

impl RouteTable {
    pub fn new(default_upstream: UpstreamUrl, named: Vec<Route>) -> Result<RouteTable, RouteError> {
        let mut routes = named;
        for (index, route) in routes.iter().enumerate() {
            for earlier in &routes[..index] {
                if earlier.name == route.name {
                    return Err(RouteError::DuplicateName(route.name.to_string()));
                }
                if earlier.prefix == route.prefix {
                    return Err(RouteError::DuplicatePrefix(route.prefix.clone()));
                }
            }
        }
        routes.sort_by_key(|route| std::cmp::Reverse(route.prefix.len()));
        routes.push(Route::default_route(default_upstream));
        Ok(RouteTable { routes })
    }

    /// The route for `path` and the rest of the path after its prefix.
    pub fn resolve<'p>(&self, path: &'p str) -> (&Route, &'p str) {
        for route in &self.routes {
            if let Some(rest) = route.strip(path) {
                return (route, rest);
            }
        }
        // Unreachable by construction (the default route strips nothing), but a total
        // function is simpler to trust than an `expect`.
        (self.default_route(), path)
    }

    pub fn default_route(&self) -> &Route {
        let last = self.routes.len() - 1;
        &self.routes[last]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter()
    }
}

#[cfg(test)]
mod tests;
