//! YAML → JSON value + span table, straight from `rlsp-yaml-parser`'s event stream.
//!
//! The syntax stage for `.yaml`/`.yml` files. Building the JSON value directly from parser
//! events (rather than through a parser's own tree) lets this stage report every
//! duplicate key with both places, cap nesting and alias expansion before memory or the
//! stack suffer, and record a span for every node without a second pass.
//!
//! Choices, all reported as positioned diagnostics rather than guessed around:
//! - YAML 1.2 core schema: `true`/`false` (any case style the spec allows) are booleans,
//!   `yes`/`no`/`on`/`off` stay strings; integers stay integers (`i64`, or `u64` above
//!   `i64::MAX`), floats floats; `.nan`, `.inf` and numbers too large for a float are
//!   rejected (JSON cannot hold them).
//! - A plain scalar used as a key is read as its text (`1:` is the key `"1"`, `true:` the key
//!   `"true"`), like a TOML bare key; collections, aliases and null as keys are rejected.
//! - One document per file; custom tags, `!!binary`/`!!timestamp`/`!!set`/`!!omap` and
//!   merge keys (`<<`) are rejected.
//! - The parser gives byte offsets; lines and columns come from the source's own line index
//!   (walked forward, as events arrive in document order), so they agree with every other
//!   diagnostic. A collection's span covers only the first line of it.
//! - The parser borrows plain and simple quoted scalars from the text: each becomes a string
//!   with a single allocation.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rlsp_yaml_parser::{CollectionStyle, Event, ScalarStyle};
use serde_json::{Map, Number, Value};

use super::ParseLimits;
use super::spans::{NodeId, NodeSpan, SpanTable, SpanTableBuilder};
use crate::diagnostics::{Code, Diagnostic, LineCursor, SourceFile, Span, lowercase_first};

/// The handle of the YAML core schema's tags (`!!str` is `tag:yaml.org,2002:str`).
const CORE_HANDLE: &str = "tag:yaml.org,2002:";

/// Parses a YAML source into a JSON value and the span of every node.
pub fn parse_yaml(
    source: &Arc<SourceFile>,
    limits: &ParseLimits,
) -> Result<(Value, SpanTable), Vec<Diagnostic>> {
    // The parser is guarded against its own panics (an internal assertion tripped by a
    // carriage return around a byte-order mark, found by fuzzing): a panic is a syntax error
    // of the file, never a crash of the engine.
    if let Some(long) = line_over(source.text(), limits.max_line_bytes) {
        return Err(vec![long_line(source, long, limits.max_line_bytes)]);
    }
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let text: &str = source.text();
        let mut builder = Builder::new(source, limits);
        for next in rlsp_yaml_parser::parse_events(text) {
            match next {
                Ok((event, span)) => {
                    builder.on_event(event, span.start as usize, span.end as usize);
                    if builder.fatal {
                        break;
                    }
                }
                Err(err) => {
                    builder.scan_error(&err);
                    break;
                }
            }
        }
        builder.finish()
    }));
    parsed.unwrap_or_else(|_| {
        // Point at what trips the parser: a byte-order mark after the start, or a carriage
        // return; else the start of the file.
        let text = source.text();
        let (at, end) = text
            .char_indices()
            .find(|&(i, c)| (c == '\u{feff}' && i > 0) || c == '\r')
            .map_or((0, 0), |(i, c)| (i, i + c.len_utf8()));
        Err(vec![
            Diagnostic::new(
                Code::SyntaxYaml,
                "the YAML parser failed on this file (an internal error of the parser)",
            )
            .at(source, source.span_of(at, end))
            .with_help("look for stray carriage returns or byte-order marks, or save the file as plain UTF-8 with Unix line ends"),
        ])
    })
}

/// The first line of `text` longer than `max` bytes, as its byte range.
fn line_over(text: &str, max: usize) -> Option<std::ops::Range<usize>> {
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()).chain([text.len()]) {
        if end - start > max {
            return Some(start..end);
        }
        start = end + 1;
    }
    None
}

fn long_line(source: &Arc<SourceFile>, line: std::ops::Range<usize>, max: usize) -> Diagnostic {
    let kib = |bytes: usize| bytes.div_ceil(1024);
    // Point at the line's first characters: the whole line is what is too long.
    let shown = line.start..line.end.min(line.start + 40);
    Diagnostic::new(
        Code::SyntaxLimit,
        format!(
            "this line is {} KiB long, over the {} KiB a line of YAML may have",
            kib(line.len()),
            kib(max)
        ),
    )
    .at(source, source.span_of(shown.start, shown.end))
    .with_help("break it up: write a long list or mapping one item per line (block style), and a long text as a block scalar (`|`)")
}

/// A node's tag as the parser resolves it (`!!str` arrives as `tag:yaml.org,2002:str`),
/// split into handle and suffix.
#[derive(Clone, Copy)]
struct Tag<'t> {
    handle: &'t str,
    suffix: &'t str,
    /// As resolved.
    text: &'t str,
}

impl<'t> Tag<'t> {
    fn new(text: &'t str) -> Self {
        match text.strip_prefix(CORE_HANDLE) {
            Some(suffix) => Self {
                handle: CORE_HANDLE,
                suffix,
                text,
            },
            // The non-specific tag `!`, and local tags (`!name`).
            None if text == "!" => Self {
                handle: "",
                suffix: "!",
                text,
            },
            None => match text.strip_prefix('!') {
                Some(suffix) => Self {
                    handle: "!",
                    suffix,
                    text,
                },
                // A verbatim tag (`!<uri>`) arrives as its URI.
                None => Self {
                    handle: "",
                    suffix: text,
                    text,
                },
            },
        }
    }
}

/// A node's start: byte offset, and its 1-based line and column (characters) in the source.
#[derive(Clone, Copy, Debug)]
struct Pos {
    byte: usize,
    line: u32,
    column: u32,
}

/// A key waiting for its value.
struct PendingKey {
    /// The key's text; `None` when the key was rejected and its value must be dropped.
    text: Option<String>,
    span: Span,
}

/// A collection's members are kept on the builder's scratch stacks (`items`, `entries`)
/// until it ends, and then moved into a value of exactly their number: growing each map and
/// list as members arrive would leave up to half of it unused, and policy sets hold many
/// small maps.
enum Container {
    /// Items start at this index of `Builder::items`.
    Seq { start: usize },
    Map {
        /// Members start at this index of `Builder::entries`.
        start: usize,
        key: Option<PendingKey>,
        /// The keys of a large mapping, for the duplicate check (a small one is scanned).
        index: Option<HashSet<String>>,
    },
}

/// Up to this many members, a mapping is scanned for a duplicate key instead of indexed.
const SCAN_KEYS: usize = 16;

/// A collection being built.
struct Frame<'a> {
    container: Container,
    /// The span node, or `None` when the collection is dropped (a rejected key's value, or a
    /// collection used as a key).
    node: Option<NodeId>,
    /// Where the collection's role in its parent was decided.
    role: Role,
    anchor: Option<&'a str>,
    /// Nodes in the subtree, for the alias budget.
    nodes: usize,
    start: Pos,
    /// Written in brackets (`[..]`, `{..}`) rather than as a block.
    flow: bool,
}

/// What a new node is to the collection that holds it.
#[derive(Clone, Copy)]
enum Role {
    Root,
    Item,
    Key,
    Value,
}

/// A finished node.
struct Built {
    value: Value,
    nodes: usize,
}

/// An anchored value, with what an alias of it copies.
struct Anchored {
    value: Value,
    nodes: usize,
    /// Its text: the bytes of its strings and keys, and one for every other value.
    bytes: usize,
}

/// The bytes of text `value` holds (see [`Anchored::bytes`]).
fn text_bytes(value: &Value) -> usize {
    let mut bytes = 0usize;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => bytes = bytes.saturating_add(text.len()),
            Value::Array(items) => pending.extend(items),
            Value::Object(fields) => {
                for (key, field) in fields {
                    bytes = bytes.saturating_add(key.len());
                    pending.push(field);
                }
            }
            _ => bytes = bytes.saturating_add(1),
        }
    }
    bytes
}

struct Builder<'a> {
    source: &'a Arc<SourceFile>,
    limits: &'a ParseLimits,
    /// Where the last node was located: the next search starts there.
    line_cursor: LineCursor,
    spans: SpanTableBuilder,
    stack: Vec<Frame<'a>>,
    /// Items of the open sequences, innermost last.
    items: Vec<Value>,
    /// Members of the open mappings, innermost last.
    entries: Vec<(String, Value)>,
    anchors: HashMap<&'a str, Anchored>,
    alias_nodes: usize,
    /// The bytes of text aliases have copied so far.
    alias_bytes: usize,
    root: Option<Value>,
    /// Whether the document is an empty plain scalar (a file holding only `---`).
    empty_root: bool,
    documents: usize,
    errors: Vec<Diagnostic>,
    /// Set when parsing cannot usefully continue.
    fatal: bool,
    /// The furthest end of a node read so far.
    last_end: usize,
}

impl<'a> Builder<'a> {
    fn new(source: &'a Arc<SourceFile>, limits: &'a ParseLimits) -> Self {
        Self {
            source,
            limits,
            line_cursor: LineCursor::default(),
            spans: SpanTableBuilder::new(source),
            stack: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
            anchors: HashMap::new(),
            alias_nodes: 0,
            alias_bytes: 0,
            root: None,
            empty_root: false,
            documents: 0,
            errors: Vec::new(),
            fatal: false,
            last_end: 0,
        }
    }

    fn on_event(&mut self, event: Event<'a>, start: usize, end: usize) {
        // A block scalar's event starts at its `|` or `>` header; its value starts on the
        // next line, where positions inside the text can be told.
        let start = match &event {
            Event::Scalar {
                style: ScalarStyle::Literal(_) | ScalarStyle::Folded(_),
                meta: None,
                ..
            } => block_content_start(self.source.text(), start, end),
            // A node starts at its properties (`&anchor`, `!tag`), which belong to it.
            Event::Scalar {
                meta: Some(meta), ..
            }
            | Event::SequenceStart {
                meta: Some(meta), ..
            }
            | Event::MappingStart {
                meta: Some(meta), ..
            } => [meta.anchor_loc, meta.tag_loc]
                .into_iter()
                .flatten()
                .map(|span| span.start as usize)
                .fold(start, usize::min),
            _ => start,
        };
        // A flow collection's start event sits on its opening bracket: take it in.
        let end = match &event {
            Event::SequenceStart {
                style: CollectionStyle::Flow,
                ..
            }
            | Event::MappingStart {
                style: CollectionStyle::Flow,
                ..
            } => end.max(start.saturating_add(1)),
            _ => end,
        };
        self.last_end = self.last_end.max(end);
        let (line, column) = self.source.line_col_near(start, &mut self.line_cursor);
        let start = Pos {
            byte: start,
            line,
            column,
        };
        let end = end.max(start.byte);
        match event {
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentEnd { .. }
            | Event::Comment { .. } => {}
            Event::DocumentStart { .. } => {
                self.documents += 1;
                if self.documents > 1 {
                    let span = self.line_span(start, end);
                    self.error(
                        Diagnostic::new(
                            Code::SyntaxUnsupported,
                            "the file holds more than one YAML document",
                        )
                        .at(self.source, span)
                        .with_help("put each document in its own file"),
                    );
                    self.fatal = true;
                }
            }
            Event::Scalar { value, style, meta } => {
                let (anchor, tag) = properties(meta.as_deref());
                self.on_scalar(value, style, anchor, tag.map(Tag::new), start, end);
            }
            Event::Alias { name } => self.on_alias(name, start, end),
            Event::SequenceStart { meta, style } => {
                let (anchor, tag) = properties(meta.as_deref());
                let flow = style == CollectionStyle::Flow;
                self.on_collection_start(false, flow, anchor, tag.map(Tag::new), start, end);
            }
            Event::MappingStart { meta, style } => {
                let (anchor, tag) = properties(meta.as_deref());
                let flow = style == CollectionStyle::Flow;
                self.on_collection_start(true, flow, anchor, tag.map(Tag::new), start, end);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                // A flow collection's end event sits on its closing bracket: take it in.
                let text = self.source.text().as_bytes();
                let end = match (self.stack.last(), text.get(end)) {
                    (Some(frame), Some(b']' | b'}')) if frame.flow => end + 1,
                    _ => end,
                };
                self.on_collection_end(end);
            }
        }
    }

    /// The role the next node plays.
    fn role(&self) -> Role {
        match self.stack.last() {
            None => Role::Root,
            Some(Frame {
                container: Container::Seq { .. },
                ..
            }) => Role::Item,
            Some(Frame {
                container: Container::Map { key: None, .. },
                ..
            }) => Role::Key,
            Some(Frame {
                container: Container::Map { key: Some(_), .. },
                ..
            }) => Role::Value,
        }
    }

    /// Records the span node for a new value node, or `None` if it is dropped.
    fn open_node(&mut self, role: Role, value: Span) -> Option<NodeId> {
        match role {
            Role::Root => Some(self.spans.root(value)),
            Role::Key => None,
            Role::Item => {
                let frame = self.stack.last()?;
                let parent = frame.node?;
                let Container::Seq { start } = frame.container else {
                    return None;
                };
                let index = self.items.len().saturating_sub(start);
                Some(self.spans.item(parent, index, value))
            }
            Role::Value => {
                let frame = self.stack.last_mut()?;
                let parent = frame.node?;
                let Container::Map { start, key, index } = &mut frame.container else {
                    return None;
                };
                let pending = key.as_mut()?;
                let text = pending.text.as_deref()?;
                let members = self.entries.get(*start..).unwrap_or_default();
                let duplicate = match index {
                    Some(index) => index.contains(text),
                    None if members.len() < SCAN_KEYS => members.iter().any(|(k, _)| k == text),
                    None => {
                        let keys: HashSet<String> =
                            members.iter().map(|(k, _)| k.clone()).collect();
                        let found = keys.contains(text);
                        *index = Some(keys);
                        found
                    }
                };
                if duplicate {
                    let key_span = pending.span;
                    let first = self.spans.find_member(parent, text);
                    let message = format!("duplicate key `{text}`");
                    pending.text = None;
                    let mut diagnostic = Diagnostic::new(Code::SyntaxDuplicateKey, message)
                        .at(self.source, key_span)
                        .with_help("remove one of them: keys must be unique in a mapping");
                    if let Some(first) = first {
                        diagnostic = diagnostic.with_related(
                            "first defined here",
                            self.source.location(first.label()),
                        );
                    }
                    self.error(diagnostic);
                    return None;
                }
                Some(self.spans.member(
                    parent,
                    text,
                    NodeSpan {
                        key: Some(pending.span),
                        value,
                    },
                ))
            }
        }
    }

    fn on_scalar(
        &mut self,
        mut text: Cow<'_, str>,
        style: ScalarStyle,
        anchor: Option<&'a str>,
        tag: Option<Tag<'_>>,
        start: Pos,
        end: usize,
    ) {
        let span = self.line_span(start, end);
        let role = self.role();
        // The parser bounds quoted and plain scalars; a block scalar (`|`) is bounded here.
        if text.len() > super::MAX_STRING_BYTES {
            self.error(
                Diagnostic::new(
                    Code::SyntaxLimit,
                    format!(
                        "a string of {} bytes is longer than the {} MiB a policy string may hold",
                        text.len(),
                        super::MAX_STRING_BYTES / (1024 * 1024)
                    ),
                )
                .at(self.source, Span { len: 0, ..span })
                .with_help("shorten it, or split it up"),
            );
            // Read on as an empty string: the file does not load, and its other problems
            // are still found.
            text = Cow::Borrowed("");
        }
        if let Role::Key = role {
            let key = self.scalar_key(text, style, tag, span);
            self.set_pending_key(key, span);
            return;
        }
        if let Role::Root = role {
            self.empty_root = text.is_empty() && style == ScalarStyle::Plain && tag.is_none();
        }
        let node = self.open_node(role, span);
        let value = match self.resolve_scalar(text, style, tag, span) {
            Some(value) => value,
            None => Value::Null,
        };
        self.finish_node(
            node.is_some() || matches!(role, Role::Root),
            Built { value, nodes: 1 },
            anchor,
        );
    }

    fn on_alias(&mut self, name: &'a str, start: Pos, end: usize) {
        let span = self.line_span(start, end);
        let role = self.role();
        if let Role::Key = role {
            self.error(
                Diagnostic::new(Code::SyntaxUnsupported, "an alias cannot be used as a key")
                    .at(self.source, span)
                    .with_help("write the key out"),
            );
            self.set_pending_key(None, span);
            return;
        }
        let node = self.open_node(role, span);
        let keep = node.is_some() || matches!(role, Role::Root);
        let Some((nodes, bytes)) = self
            .anchors
            .get(name)
            .map(|anchored| (anchored.nodes, anchored.bytes))
        else {
            self.error(
                Diagnostic::new(Code::SyntaxYaml, "the alias names an unknown anchor")
                    .at(self.source, span)
                    .with_help("define the anchor (`&name`) before its first use (`*name`)"),
            );
            self.finish_node(
                keep,
                Built {
                    value: Value::Null,
                    nodes: 1,
                },
                None,
            );
            return;
        };
        self.alias_bytes = self.alias_bytes.saturating_add(bytes);
        if self.alias_bytes > self.limits.max_alias_bytes {
            self.error(
                Diagnostic::new(
                    Code::SyntaxLimit,
                    format!(
                        "aliases copy more than {} MiB of text",
                        self.limits.max_alias_bytes / (1024 * 1024)
                    ),
                )
                .at(self.source, span)
                .with_help("write the data out instead of aliasing large values many times"),
            );
            self.fatal = true;
            return;
        }
        self.alias_nodes = self.alias_nodes.saturating_add(nodes);
        if self.alias_nodes > self.limits.max_alias_nodes {
            self.error(
                Diagnostic::new(
                    Code::SyntaxLimit,
                    format!(
                        "aliases expand to more than {} nodes",
                        self.limits.max_alias_nodes
                    ),
                )
                .at(self.source, span)
                .with_help("write the data out instead of nesting aliases"),
            );
            self.fatal = true;
            return;
        }
        let value = self
            .anchors
            .get(name)
            .map_or(Value::Null, |anchored| anchored.value.clone());
        self.finish_node(keep, Built { value, nodes }, None);
    }

    fn on_collection_start(
        &mut self,
        mapping: bool,
        flow: bool,
        anchor: Option<&'a str>,
        tag: Option<Tag<'_>>,
        start: Pos,
        end: usize,
    ) {
        let span = self.line_span(start, end);
        if self.stack.len() >= self.limits.max_depth {
            self.error(
                Diagnostic::new(
                    Code::SyntaxLimit,
                    format!(
                        "the document nests deeper than {} levels",
                        self.limits.max_depth
                    ),
                )
                .at(self.source, span)
                .with_help("flatten the structure"),
            );
            self.fatal = true;
            return;
        }
        if let Some(tag) = tag {
            let expected = if mapping { "map" } else { "seq" };
            if !(tag.handle == CORE_HANDLE && tag.suffix == expected) {
                self.unsupported_tag(&tag, span);
            }
        }
        let role = self.role();
        // A collection used as a key is reported when it ends, with its whole span.
        let node = match role {
            Role::Key => None,
            Role::Root | Role::Item | Role::Value => self.open_node(role, span),
        };
        let container = if mapping {
            Container::Map {
                start: self.entries.len(),
                key: None,
                index: None,
            }
        } else {
            Container::Seq {
                start: self.items.len(),
            }
        };
        self.stack.push(Frame {
            container,
            node,
            role,
            anchor,
            nodes: 1,
            start,
            flow,
        });
    }

    fn on_collection_end(&mut self, end: usize) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let span = self.line_span(frame.start, end.max(frame.start.byte));
        if let Some(node) = frame.node {
            self.spans.set_value(node, span);
        }
        // Take the members first: a collection used as a key is reported and dropped, and its
        // members must leave the scratch stacks either way.
        let value = match frame.container {
            Container::Seq { start } => {
                let start = start.min(self.items.len());
                let mut items = Vec::with_capacity(self.items.len() - start);
                items.extend(self.items.drain(start..));
                Value::Array(items)
            }
            Container::Map { start, .. } => {
                let start = start.min(self.entries.len());
                let mut map = Map::with_capacity(self.entries.len() - start);
                map.extend(self.entries.drain(start..));
                Value::Object(map)
            }
        };
        if let Role::Key = frame.role {
            let what = match value {
                Value::Array(_) => "a sequence",
                _ => "a mapping",
            };
            self.error(
                Diagnostic::new(
                    Code::SyntaxUnsupported,
                    format!("{what} cannot be used as a key"),
                )
                .at(self.source, span)
                .with_help("keys must be strings"),
            );
            self.set_pending_key(None, span);
            return;
        }
        self.finish_node(
            frame.node.is_some(),
            Built {
                value,
                nodes: frame.nodes,
            },
            frame.anchor,
        );
    }

    /// Stores a finished value in its parent (or as the root) and remembers its anchor.
    fn finish_node(&mut self, keep: bool, built: Built, anchor: Option<&'a str>) {
        if let Some(anchor) = anchor {
            self.anchors.insert(
                anchor,
                Anchored {
                    bytes: text_bytes(&built.value),
                    value: built.value.clone(),
                    nodes: built.nodes,
                },
            );
        }
        let Some(frame) = self.stack.last_mut() else {
            if self.root.is_none() {
                self.root = Some(built.value);
            }
            return;
        };
        frame.nodes = frame.nodes.saturating_add(built.nodes);
        match &mut frame.container {
            Container::Seq { .. } => {
                if keep {
                    self.items.push(built.value);
                }
            }
            Container::Map { key, index, .. } => {
                if let Some(PendingKey {
                    text: Some(text), ..
                }) = key.take()
                    && keep
                {
                    if let Some(index) = index {
                        index.insert(text.clone());
                    }
                    self.entries.push((text, built.value));
                }
            }
        }
    }

    fn set_pending_key(&mut self, text: Option<String>, span: Span) {
        if let Some(Frame {
            container: Container::Map { key, .. },
            ..
        }) = self.stack.last_mut()
        {
            *key = Some(PendingKey { text, span });
        }
    }

    /// The text of a scalar key, or `None` (after reporting) if it cannot be a key.
    fn scalar_key(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        tag: Option<Tag<'_>>,
        span: Span,
    ) -> Option<String> {
        if let Some(tag) = tag
            && !is_string_tag(&tag)
            && !(tag.handle == CORE_HANDLE && matches!(tag.suffix, "int" | "float" | "bool"))
        {
            self.unsupported_tag(&tag, span);
            return None;
        }
        if style == ScalarStyle::Plain && tag.is_none() {
            if text.is_empty() || matches!(text.as_ref(), "~" | "null" | "Null" | "NULL") {
                self.error(
                    Diagnostic::new(Code::SyntaxUnsupported, "a key cannot be null")
                        .at(self.source, span)
                        .with_help("write a name before the `:`, or quote it: `\"null\"`"),
                );
                return None;
            }
            if text.as_ref() == "<<" {
                self.error(
                    Diagnostic::new(
                        Code::SyntaxUnsupported,
                        "merge keys (`<<`) are not supported",
                    )
                    .at(self.source, span)
                    .with_help("write the merged keys out"),
                );
                return None;
            }
        }
        Some(text.into_owned())
    }

    /// The JSON value of a scalar, or `None` after reporting why it has none.
    fn resolve_scalar(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        tag: Option<Tag<'_>>,
        span: Span,
    ) -> Option<Value> {
        let resolved = match tag {
            None if style == ScalarStyle::Plain => resolve_plain(&text),
            None => Resolved::String,
            Some(tag) if is_string_tag(&tag) => Resolved::String,
            Some(tag) if tag.handle == CORE_HANDLE => {
                let resolved = match tag.suffix {
                    "int" => Some(resolve_plain(&text)).filter(|r| r.is_integer()),
                    "float" => match resolve_plain(&text) {
                        Resolved::Int(i) => Some(Resolved::Float(i as f64)),
                        Resolved::UInt(u) => Some(Resolved::Float(u as f64)),
                        other @ (Resolved::Float(_) | Resolved::NonFinite) => Some(other),
                        _ => None,
                    },
                    "bool" => Some(resolve_plain(&text)).filter(|r| matches!(r, Resolved::Bool(_))),
                    "null" => Some(resolve_plain(&text)).filter(|r| matches!(r, Resolved::Null)),
                    _ => {
                        self.unsupported_tag(&tag, span);
                        return None;
                    }
                };
                match resolved {
                    Some(resolved) => resolved,
                    None => {
                        self.error(
                            Diagnostic::new(
                                Code::SyntaxYaml,
                                format!("`{text}` cannot be read as `!!{}`", tag.suffix),
                            )
                            .at(self.source, span)
                            .with_help("fix the value or remove the tag"),
                        );
                        return None;
                    }
                }
            }
            Some(tag) => {
                self.unsupported_tag(&tag, span);
                return None;
            }
        };
        match resolved {
            Resolved::Null => Some(Value::Null),
            Resolved::Bool(b) => Some(Value::Bool(b)),
            Resolved::Int(i) => Some(Value::Number(i.into())),
            Resolved::UInt(u) => Some(Value::Number(u.into())),
            Resolved::Float(f) => match Number::from_f64(f) {
                Some(number) => Some(Value::Number(number)),
                None => {
                    self.non_finite(&text, span);
                    None
                }
            },
            Resolved::NonFinite => {
                self.non_finite(&text, span);
                None
            }
            Resolved::IntOverflow => {
                self.error(
                    Diagnostic::new(
                        Code::SyntaxUnsupported,
                        format!("the integer `{text}` does not fit in 64 bits"),
                    )
                    .at(self.source, span)
                    .with_help("use a smaller number, or quote it to make it a string"),
                );
                None
            }
            Resolved::String => Some(Value::String(text.into_owned())),
        }
    }

    fn non_finite(&mut self, text: &str, span: Span) {
        self.error(
            Diagnostic::new(
                Code::SyntaxUnsupported,
                format!("`{text}` is not a finite number"),
            )
            .at(self.source, span)
            .with_help("policy values must be finite numbers; quote it to make it a string"),
        );
    }

    fn unsupported_tag(&mut self, tag: &Tag<'_>, span: Span) {
        let shown = if tag.handle == CORE_HANDLE {
            format!("!!{}", tag.suffix)
        } else if tag.handle.is_empty() {
            format!("!<{}>", tag.suffix)
        } else {
            tag.text.to_owned()
        };
        self.error(
            Diagnostic::new(
                Code::SyntaxUnsupported,
                format!("the tag `{shown}` is not supported"),
            )
            .at(self.source, span)
            .with_help("remove the tag: policy files hold plain strings, numbers, lists and maps"),
        );
    }

    fn scan_error(&mut self, err: &rlsp_yaml_parser::Error) {
        let info = err.message.as_str();
        let text = self.source.text();
        let mut offset = err.pos.byte_offset;
        let mut help = None;
        // The parser reads a flow collection whole before its events: one left open is not
        // on the stack, but starts at the first bracket after the last node read.
        let open_flow = || {
            text.get(self.last_end..)
                .and_then(|rest| rest.find(['[', '{']))
                .map(|found| self.last_end + found)
        };
        if info.starts_with("unterminated flow collection")
            && let Some(opening) = open_flow()
        {
            // Found at the end of the text: point at the bracket left open instead.
            offset = opening;
            help = Some(match text.as_bytes().get(offset) {
                Some(b'[') => CLOSE_LIST,
                _ => CLOSE_MAPPING,
            });
        } else if let Some(quote) = match info {
            "unterminated double-quoted scalar" => Some('"'),
            "unterminated single-quoted scalar" => Some('\''),
            _ => None,
        } {
            // Found at the end of the text: point at the opening quote instead.
            if let Some(found) = unclosed_quote(text, self.last_end, quote) {
                offset = found;
            }
        }
        let (code, general) = yaml_help(info);
        let help = help.unwrap_or(general);
        let span = self.source.span(offset, 0);
        // A parse error after an earlier problem is usually a consequence of it: keep both.
        self.error(
            Diagnostic::new(code, backtick_tokens(&lowercase_first(info)))
                .at(self.source, span)
                .with_help(help),
        );
        self.fatal = true;
    }

    fn finish(self) -> Result<(Value, SpanTable), Vec<Diagnostic>> {
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        match self.root {
            // A bare `---` (an empty plain scalar as the document) counts as an empty file.
            Some(value) if !self.empty_root => Ok((value, self.spans.build())),
            Some(_) | None => Err(vec![super::empty_file(self.source)]),
        }
    }

    fn error(&mut self, diagnostic: Diagnostic) {
        self.errors.push(diagnostic);
    }

    /// The span of a node, cut at the end of its first line and without trailing blanks.
    ///
    /// `start` was located by a forward walk of the source's line index (this runs for every
    /// node).
    fn line_span(&self, start: Pos, end: usize) -> Span {
        if start.byte >= self.source.text().len() {
            return self.source.first_line_span(start.byte, end);
        }
        let text: &str = self.source.text();
        let rest = text
            .get(start.byte..end.max(start.byte).min(text.len()))
            .unwrap_or("");
        let first_line = memchr::memchr2(b'\n', b'\r', rest.as_bytes())
            .and_then(|cut| rest.get(..cut))
            .unwrap_or(rest);
        Span {
            offset: start.byte,
            len: first_line.trim_end_matches([' ', '\t']).len(),
            line: start.line,
            column: start.column,
        }
    }
}

/// Where the content of a block scalar whose header starts at `start` begins: the first
/// non-blank character after the header line (`start` itself if there is none before `end`).
fn block_content_start(text: &str, start: usize, end: usize) -> usize {
    let Some(body) = text.get(start..end.min(text.len())) else {
        return start;
    };
    let Some(newline) = body.find('\n') else {
        return start;
    };
    let after = &body[newline + 1..];
    match after.find(|c: char| c != ' ' && c != '\n' && c != '\r') {
        Some(first) => start + newline + 1 + first,
        None => start,
    }
}

/// The first `quote` after `from` that no later quote closes (quoted strings before it are
/// skipped whole, escapes included): where a string the parser found unterminated opens.
fn unclosed_quote(text: &str, from: usize, quote: char) -> Option<usize> {
    let mut at = from;
    loop {
        let open = at + text.get(at..)?.find(quote)?;
        let mut chars = text.get(open + 1..)?.char_indices();
        let mut close = None;
        while let Some((index, c)) = chars.next() {
            match c {
                '\\' if quote == '"' => {
                    chars.next();
                }
                // `''` is an escaped quote inside a single-quoted string.
                '\'' if quote == '\'' && text.get(open + 1 + index + 1..)?.starts_with('\'') => {
                    chars.next();
                }
                c if c == quote => {
                    close = Some(open + 1 + index);
                    break;
                }
                _ => {}
            }
        }
        match close {
            Some(close) => at = close + 1,
            None => return Some(open),
        }
    }
}

/// A node's anchor and tag, if it has either.
fn properties<'m, 'e>(
    meta: Option<&'m rlsp_yaml_parser::EventMeta<'e>>,
) -> (Option<&'e str>, Option<&'m str>) {
    match meta {
        Some(meta) => (meta.anchor, meta.tag.as_deref()),
        None => (None, None),
    }
}

/// Whether a tag makes a scalar a string: `!!str`, or the non-specific `!`.
fn is_string_tag(tag: &Tag<'_>) -> bool {
    // The non-specific tag `!` has an empty handle and the suffix `!`.
    (tag.handle == CORE_HANDLE && tag.suffix == "str")
        || (tag.handle.is_empty() && tag.suffix == "!")
}

/// A plain scalar resolved by the YAML 1.2 core schema.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    NonFinite,
    IntOverflow,
    String,
}

impl Resolved {
    fn is_integer(&self) -> bool {
        matches!(
            self,
            Resolved::Int(_) | Resolved::UInt(_) | Resolved::IntOverflow
        )
    }
}

/// Resolves a plain scalar by the YAML 1.2 core schema (§10.3.2).
fn resolve_plain(text: &str) -> Resolved {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return Resolved::NonFinite,
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return u64::from_str_radix(hex, 16).map_or(Resolved::IntOverflow, unsigned);
        }
        return Resolved::String;
    }
    if let Some(octal) = text.strip_prefix("0o") {
        if !octal.is_empty() && octal.bytes().all(|b| matches!(b, b'0'..=b'7')) {
            return u64::from_str_radix(octal, 8).map_or(Resolved::IntOverflow, unsigned);
        }
        return Resolved::String;
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = text.parse::<i64>() {
            return Resolved::Int(i);
        }
        if !text.starts_with('-')
            && let Ok(u) = digits.parse::<u64>()
        {
            return Resolved::UInt(u);
        }
        return Resolved::IntOverflow;
    }
    if is_core_float(digits) {
        return match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Resolved::Float(f),
            _ => Resolved::NonFinite,
        };
    }
    Resolved::String
}

fn unsigned(u: u64) -> Resolved {
    i64::try_from(u).map_or(Resolved::UInt(u), Resolved::Int)
}

/// Whether an unsigned text matches `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_core_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    let int_digits = count_digits(&bytes[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = count_digits(&bytes[i..]);
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp_digits = count_digits(&bytes[i..]);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == bytes.len()
}

fn count_digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Help for a flow sequence left open or missing a comma.
const CLOSE_LIST: &str = "close the list with `]` and separate items with `,`";
/// Help for a flow mapping left open or missing a comma.
const CLOSE_MAPPING: &str = "close the mapping with `}` and separate entries with `,`";

/// The code and a help text for a parse error, from its message.
fn yaml_help(info: &str) -> (Code, &'static str) {
    if info.contains("nesting depth") {
        return (Code::SyntaxLimit, "flatten the structure");
    }
    if info.contains("exceeds maximum") {
        return (Code::SyntaxLimit, "shorten it, or split it up");
    }
    let help = if info.contains("not indented enough") && info.contains("flow") {
        "a `[` or `{` may be left open above: close it, or indent the lines that continue it"
    } else if info.contains("inline value") || info.contains("mapping value") {
        "quote values that contain `: `, and check the indentation"
    } else if info
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|word| word == "tab" || word == "tabs")
    {
        "indent with spaces: YAML does not allow tabs for indentation"
    } else if info.contains("indent") {
        "check the indentation: keys of one mapping must line up"
    } else if info.contains("flow sequence") {
        CLOSE_LIST
    } else if info.contains("flow mapping") {
        CLOSE_MAPPING
    } else if info.contains("quoted scalar") {
        "close the quoted string"
    } else if info.contains("anchor") || info.contains("alias") {
        "define the anchor (`&name`) before its first use (`*name`)"
    } else {
        "fix the YAML syntax at this position"
    };
    (Code::SyntaxYaml, help)
}

/// Rewrites the parser's quoted tokens (`':'`) in our style (`` `:` ``): a quote not preceded
/// by a letter or digit, one to three non-blank characters, and a closing quote.
fn backtick_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('\'') {
        let before = rest[..start].chars().next_back();
        let after = &rest[start + 1..];
        let token_end = after.find('\'');
        let is_token = !before.is_some_and(char::is_alphanumeric)
            && token_end.is_some_and(|end| {
                (1..=3).contains(&end) && !after[..end].contains(char::is_whitespace)
            });
        match token_end {
            Some(end) if is_token => {
                out.push_str(&rest[..start]);
                out.push('`');
                out.push_str(&after[..end]);
                out.push('`');
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..=start]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::source::Format;
    use serde_json::json;

    /// A NUL in a quoted string is no tab ("non-printable" holds the letters "tab").
    #[test]
    fn a_non_printable_character_is_not_taken_for_a_tab() {
        let errors = parse("calls:\n  - id: \"a\u{0}\"\n").unwrap_err();
        let help = errors[0].help.as_deref().unwrap_or_default();
        assert!(!help.contains("tabs"), "{errors:?}");
        let errors = parse("a:\n\tb: 1\n").unwrap_err();
        let help = errors[0].help.as_deref().unwrap_or_default();
        assert!(help.contains("tabs"), "{errors:?}");
    }

    /// An alias of a large string is one node but a whole copy of it: 512 KiB aliased 40
    /// times (a 1 MiB string aliased 1 000 times took gigabytes and aborted the process).
    #[test]
    fn aliases_copying_more_text_than_the_limit_are_refused_at_the_alias() {
        let line = "a".repeat(512);
        let mut text = String::from("big: &big |\n");
        for _ in 0..1024 {
            text.push_str(&format!("  {line}\n"));
        }
        text.push_str("copies: [");
        text.push_str(&vec!["*big"; 40].join(", "));
        text.push_str("]\n");
        let errors = parse(&text).expect_err("refused");
        assert!(
            errors[0].message.contains("aliases copy more than 16 MiB"),
            "{errors:?}"
        );
        // A few copies load.
        let few = text.replace(&vec!["*big"; 40].join(", "), "*big, *big");
        assert!(parse(&few).is_ok());
    }

    fn parse(text: &str) -> Result<(Value, SpanTable), Vec<Diagnostic>> {
        let source = SourceFile::in_memory("t.yaml", text, Format::Yaml);
        parse_yaml(&source, &ParseLimits::default())
    }

    /// A block scalar is bounded like a quoted one (the parser bounds only those): a 2 MB
    /// `reason: |` loaded.
    #[test]
    fn a_block_scalar_longer_than_a_policy_string_may_be_is_refused_at_its_place() {
        let line = "x".repeat(200_000);
        let block: String = (0..6).map(|_| format!("  {line}\n")).collect();
        let errors = parse(&format!("version: 1\nreason: |\n{block}name: ok\n")).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].code, Code::SyntaxLimit);
        assert!(errors[0].message.contains("1 MiB"), "{}", errors[0].message);
        let location = errors[0].location.as_ref().unwrap();
        assert_eq!(location.span.line, 3);
        // A message quoting a huge value is cut.
        let long = Diagnostic::new(Code::SchemaInvalid, "y".repeat(100_000));
        assert!(long.message.len() < 5000, "{}", long.message.len());
        assert!(long.message.ends_with("more bytes)"));
    }

    fn value(text: &str) -> Value {
        match parse(text) {
            Ok((value, _)) => value,
            Err(errors) => panic!("{text:?}: {errors:?}"),
        }
    }

    fn codes(text: &str) -> Vec<Code> {
        match parse(text) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(|d| d.code).collect(),
        }
    }

    /// A line longer than the limit is refused before the parser sees it (the parser's time
    /// on a one-line flow collection grows with the square of the line), at its line; the
    /// same data written one item per line parses.
    #[test]
    fn a_line_over_the_limit_is_refused_at_its_line() {
        let limits = ParseLimits::default();
        let items: Vec<String> = (0..limits.max_line_bytes / 8)
            .map(|i| format!("item{i}"))
            .collect();
        let flow = format!("version: 1\nitems: [{}]\n", items.join(", "));
        let source = SourceFile::in_memory("t.yaml", flow, Format::Yaml);
        let errors = parse_yaml(&source, &limits).expect_err("refused");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, Code::SyntaxLimit);
        let location = errors[0].location.as_ref().expect("a location");
        assert_eq!(location.display(), "t.yaml:2:1");
        assert!(
            errors[0].message.contains("over the 256 KiB"),
            "{}",
            errors[0].message
        );

        let block = format!(
            "version: 1\nitems:\n{}",
            items
                .iter()
                .map(|i| format!("  - {i}\n"))
                .collect::<String>()
        );
        assert_eq!(
            value(&block)["items"].as_array().map(Vec::len),
            Some(items.len())
        );
        // A line exactly at the limit parses; a byte more is refused (the last line too).
        let at_limit = format!("a: {}", "x".repeat(limits.max_line_bytes - 3));
        assert_eq!(codes(&at_limit), []);
        assert_eq!(codes(&format!("{at_limit}x")), [Code::SyntaxLimit]);
    }

    #[test]
    fn a_parser_panic_is_a_syntax_error() {
        // Tripped a debug assertion of the parser (found by `load::fuzz`).
        // It must return (an error or a value), not panic: without the guard this panics in
        // a debug build.
        if let Err(diagnostics) = parse("\r\u{feff}\r") {
            assert!(!diagnostics.is_empty());
        }
    }

    #[test]
    fn a_parser_panic_on_a_flow_collection_with_replacement_characters_is_a_syntax_error() {
        // The parser sliced a string inside a multi-byte character (found by the `batch`
        // fuzz target, which decodes its input lossily). The guard turns the panic into a
        // syntax error of the file.
        let bytes = include_bytes!("../../fuzz/seeds/batch/regression-flow-char-boundary");
        let text = String::from_utf8_lossy(bytes);
        let diagnostics = parse(&text).expect_err("refused");
        assert!(
            diagnostics
                .iter()
                .any(|d| d.code == Code::SyntaxYaml && d.message.contains("internal error")),
            "{diagnostics:?}"
        );
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let table = [
            ("a: yes", json!({"a": "yes"})),
            ("a: NO", json!({"a": "NO"})),
            ("a: True", json!({"a": true})),
            ("a: FALSE", json!({"a": false})),
            ("a: ~", json!({"a": null})),
            ("a:", json!({"a": null})),
            ("a: 007", json!({"a": 7})),
            ("a: -12", json!({"a": -12})),
            ("a: +12", json!({"a": 12})),
            ("a: 0x1F", json!({"a": 31})),
            ("a: 0o17", json!({"a": 15})),
            (
                "a: 18446744073709551615",
                json!({"a": 18446744073709551615u64}),
            ),
            ("a: 1.5", json!({"a": 1.5})),
            ("a: 1e3", json!({"a": 1000.0})),
            ("a: .5", json!({"a": 0.5})),
            ("a: '1'", json!({"a": "1"})),
            ("a: !!str 1", json!({"a": "1"})),
            ("a: !!float 1", json!({"a": 1.0})),
            ("a: ! 12", json!({"a": "12"})),
            ("a: 1_000", json!({"a": "1_000"})),
            ("a: 2024-01-01", json!({"a": "2024-01-01"})),
            ("a: 0x", json!({"a": "0x"})),
            ("a: 1.2.3", json!({"a": "1.2.3"})),
        ];
        for (text, expected) in table {
            assert_eq!(value(text), expected, "{text}");
        }
    }

    #[test]
    fn parser_quotes_become_backticks() {
        assert_eq!(
            backtick_tokens("illegal placement of ':' indicator, expected ',' or ']'"),
            "illegal placement of `:` indicator, expected `,` or `]`"
        );
        assert_eq!(backtick_tokens("it's 'long text'"), "it's 'long text'");
    }

    #[test]
    fn integers_and_floats_keep_their_kind() {
        let v = value("i: 3\nf: 3.0");
        assert!(v["i"].is_i64());
        assert!(v["f"].is_f64());
    }

    #[test]
    fn scalar_keys_are_read_as_text() {
        assert_eq!(
            value("1: a\ntrue: b\n1.5: c\n'x': d"),
            json!({"1": "a", "true": "b", "1.5": "c", "x": "d"})
        );
    }

    #[test]
    fn rejected_constructs() {
        let table = [
            ("a: .nan", Code::SyntaxUnsupported),
            ("a: -.inf", Code::SyntaxUnsupported),
            ("a: 1e999", Code::SyntaxUnsupported),
            ("a: 99999999999999999999", Code::SyntaxUnsupported),
            ("a: -9999999999999999999", Code::SyntaxUnsupported),
            ("a: !foo x", Code::SyntaxUnsupported),
            ("a: !!binary aGk=", Code::SyntaxUnsupported),
            ("a: !!set {x}", Code::SyntaxUnsupported),
            ("a: !!int x", Code::SyntaxYaml),
            ("? [1]\n: x", Code::SyntaxUnsupported),
            ("~: x", Code::SyntaxUnsupported),
            ("a: &x 1\n*x : 2", Code::SyntaxUnsupported),
            ("<<: {a: 1}", Code::SyntaxUnsupported),
            ("a: 1\n---\nb: 2", Code::SyntaxUnsupported),
            ("a: 1\na: 2", Code::SyntaxDuplicateKey),
            ("a: [1, 2", Code::SyntaxYaml),
            ("a: b: c", Code::SyntaxYaml),
            ("", Code::SyntaxEmpty),
            ("# only a comment\n", Code::SyntaxEmpty),
            ("---\n", Code::SyntaxEmpty),
        ];
        for (text, code) in table {
            assert_eq!(codes(text).first(), Some(&code), "{text:?}");
        }
    }

    #[test]
    fn unclosed_brackets_and_quotes_are_reported_where_they_open() {
        let at = |text: &str| match parse(text) {
            Ok(_) => panic!("{text:?} parsed"),
            Err(errors) => {
                let span = errors[0].location.as_ref().unwrap().span;
                (errors[0].code, span.line, span.column)
            }
        };
        // Closed strings before the open one are skipped, escapes included.
        assert_eq!(
            at("a: {x: \"o\\\"k\", y: \"open}\n"),
            (Code::SyntaxYaml, 1, 19)
        );
        assert_eq!(at("a: ['it''s', 'open]\n"), (Code::SyntaxYaml, 1, 14));
        assert_eq!(at("a: 1\nb: [x, {y: 2}\n"), (Code::SyntaxYaml, 2, 4));
    }

    #[test]
    fn every_duplicate_key_is_reported_with_the_first() {
        let Err(errors) = parse("a: 1\nb:\n  c: 1\n  c: 2\na: 3\n") else {
            panic!("expected errors");
        };
        assert_eq!(errors.len(), 2);
        let first = &errors[0];
        let location = first.location.as_ref().unwrap();
        assert_eq!((location.span.line, location.span.column), (4, 3));
        assert_eq!(first.message, "duplicate key `c`");
        assert_eq!(first.related[0].location.span.line, 3);
        let second = errors[1].location.as_ref().unwrap();
        assert_eq!((second.span.line, second.span.column), (5, 1));
        assert_eq!(errors[1].related[0].location.span.line, 1);
    }

    #[test]
    fn alias_bombs_hit_the_budget() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let prev = level - 1;
            text.push_str(&format!(
                "a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        assert_eq!(codes(&text), [Code::SyntaxLimit]);
    }

    #[test]
    fn small_aliases_are_expanded() {
        assert_eq!(
            value("base: &b {x: 1}\nuse: *b"),
            json!({"base": {"x": 1}, "use": {"x": 1}})
        );
    }

    #[test]
    fn deep_nesting_hits_the_limit() {
        let flow = format!("a: {}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(codes(&flow), [Code::SyntaxLimit]);
        let block: String = (0..300).map(|_| "- ").collect::<String>() + "x";
        assert_eq!(codes(&block), [Code::SyntaxLimit]);
    }

    #[test]
    fn spans_of_keys_and_values() {
        let text = "name: ä\ntools:\n  Bash:\n    argv: [bash, \"-c\"]\n    flow: {k: v}\nrules:\n  - name: x\n    text: |\n      line one\n      line two\n  - 'q'\n";
        let (_, spans) = parse(text).unwrap();
        let at = |pointer: &str| {
            let node = spans.get(pointer).unwrap_or_else(|| panic!("{pointer}"));
            let key = node.key.map(|k| (k.line, k.column, k.len));
            (key, (node.value.line, node.value.column, node.value.len))
        };
        assert_eq!(at("/name"), (Some((1, 1, 4)), (1, 7, 2)));
        assert_eq!(at("/tools/Bash"), (Some((3, 3, 4)), (4, 5, 18)));
        assert_eq!(at("/tools/Bash/argv"), (Some((4, 5, 4)), (4, 11, 12)));
        assert_eq!(at("/tools/Bash/argv/1"), (None, (4, 18, 4)));
        assert_eq!(at("/tools/Bash/flow/k"), (Some((5, 12, 1)), (5, 15, 1)));
        assert_eq!(at("/rules/0"), (None, (7, 5, 7)));
        assert_eq!(at("/rules/0/text"), (Some((8, 5, 4)), (9, 7, 8)));
        assert_eq!(at("/rules/1"), (None, (11, 5, 3)));
    }

    /// Regression: at the end of the text the parser counts a line the index does not have.
    #[test]
    fn null_key_at_end_of_file_is_positioned_on_the_last_line() {
        let Err(errors) = parse("? ") else {
            panic!("expected an error");
        };
        let span = errors[0].location.as_ref().unwrap().span;
        assert_eq!((span.line, span.column), (1, 3));
    }

    /// Regression: the parser skips byte-order marks, which the index counts as characters.
    #[test]
    fn byte_order_marks_inside_the_text_do_not_shift_columns() {
        // The first mark is dropped by `SourceFile`; the second stays in the text.
        let source = SourceFile::in_memory("t.yaml", "\u{feff}\u{feff}a: 1\n", Format::Yaml);
        let (_, spans) = parse_yaml(&source, &ParseLimits::default()).unwrap();
        let value = spans.get("/a").unwrap().value;
        assert_eq!(source.line_col(value.offset), (value.line, value.column));
    }

    /// Lone `\r` line breaks count as lines for YAML but not for the index: spans then come
    /// from the index, so lines and columns stay consistent with it.
    #[test]
    fn lone_carriage_returns_keep_positions_consistent() {
        let source = SourceFile::in_memory("t.yaml", "a: 1\rb: 2\n", Format::Yaml);
        if let Ok((_, spans)) = parse_yaml(&source, &ParseLimits::default()) {
            for (_, node) in spans.iter() {
                let value = node.value;
                assert_eq!(source.line_col(value.offset), (value.line, value.column));
            }
        }
    }

    #[test]
    fn multi_line_plain_scalars_are_cut_at_their_first_line() {
        let text = "k: plain\n  continued\nz: 1\n";
        let (value, spans) = parse(text).unwrap();
        assert_eq!(value["k"], "plain continued");
        let span = spans.get("/k").unwrap().value;
        assert_eq!(&text[span.offset..span.end()], "plain");
    }

    #[test]
    fn spans_after_non_ascii_text_are_in_bytes() {
        let text = "ü: \"日本語\"\nkey: value\n";
        let source = SourceFile::in_memory("t.yaml", text, Format::Yaml);
        let (_, spans) = parse_yaml(&source, &ParseLimits::default()).unwrap();
        let node = spans.get("/key").unwrap();
        let key = node.key.unwrap();
        assert_eq!(&text[key.offset..key.end()], "key");
        assert_eq!(&text[node.value.offset..node.value.end()], "value");
        assert_eq!((node.value.line, node.value.column), (2, 6));
        let quoted = spans.get("/ü").unwrap().value;
        assert_eq!(&text[quoted.offset..quoted.end()], "\"日本語\"");
        assert_eq!(quoted.column, 4);
    }
}
