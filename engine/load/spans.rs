//! Where every node of a parsed document came from: a table from RFC 6901 JSON pointers
//! (`/tools/Bash/timeout/max`, `/rules/0/name`) to the source span of the node's key and
//! value.
//!
//! The syntax stage fills the table while it builds the JSON value; the schema stage, the
//! typed deserialisation (through `serde_path_to_error`) and the semantic checks look errors
//! up in it, so every diagnostic points at the exact text it is about.
//!
//! The table stores one segment per node (not one full pointer per node), so its size is
//! linear in the document even for long keys deep in the tree; lookups walk the pointer
//! segment by segment with a binary search per level.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use crate::diagnostics::{SourceFile, Span};

/// The spans of one node: its key (for a member of a mapping) and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct NodeSpan {
    /// The key's span, for a member of a mapping; `None` for the root and sequence items.
    pub key: Option<Span>,
    /// The value's span. For a collection this covers its first line only.
    pub value: Span,
}

impl NodeSpan {
    /// The span that best names the node as a whole: its key if it has one, else its value.
    pub fn label(&self) -> Span {
        self.key.unwrap_or(self.value)
    }
}

/// A node in a [`SpanTableBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(u32);

/// The parent of the root.
const NO_PARENT: u32 = u32::MAX;

/// A [`Span`] as a table stores it: 8 bytes instead of 24. Its line and column are not
/// stored: they follow from the offset and the source's line index, and are computed when
/// a span is read (rarely: for a diagnostic or a provenance), which keeps a snapshot's
/// tables a third smaller. Policy files are far below 4 GiB (the reader refuses files over
/// its size limit); a larger offset saturates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Packed {
    /// `u32::MAX` only in [`Packed::NONE`].
    offset: u32,
    len: u32,
}

impl Packed {
    /// No span (a node without a key).
    const NONE: Self = Self {
        offset: u32::MAX,
        len: 0,
    };

    fn pack(span: Span) -> Self {
        Self {
            offset: u32::try_from(span.offset)
                .map_or(u32::MAX - 1, |offset| offset.min(u32::MAX - 1)),
            len: u32::try_from(span.len).unwrap_or(u32::MAX),
        }
    }

    fn pack_key(key: Option<Span>) -> Self {
        key.map_or(Self::NONE, Self::pack)
    }

    fn unpack(self, source: &SourceFile) -> Span {
        let offset = self.offset as usize;
        let (line, column) = source.line_col(offset);
        Span {
            offset,
            len: self.len as usize,
            line,
            column,
        }
    }

    fn unpack_key(self, source: &SourceFile) -> Option<Span> {
        (self != Self::NONE).then(|| self.unpack(source))
    }
}

/// One node: 28 bytes (a table holds one per key, value and sequence item of a document,
/// and a snapshot keeps the tables of all its files).
#[derive(Clone, Debug)]
struct Node {
    parent: u32,
    /// The unescaped segment is `arena[seg_start..seg_end]`.
    seg_start: u32,
    seg_end: u32,
    key: Packed,
    value: Packed,
}

impl Node {
    fn span(&self, source: &SourceFile) -> NodeSpan {
        NodeSpan {
            key: self.key.unpack_key(source),
            value: self.value.unpack(source),
        }
    }

    fn segment<'a>(&self, arena: &'a str) -> &'a str {
        arena
            .get(self.seg_start as usize..self.seg_end as usize)
            .unwrap_or_default()
    }
}

/// Builds a [`SpanTable`] while a document is parsed: one root, then children in document
/// order.
#[derive(Debug)]
pub struct SpanTableBuilder {
    nodes: Vec<Node>,
    arena: String,
    source: Arc<SourceFile>,
}

impl SpanTableBuilder {
    /// An empty builder for the spans of `source`, with room for the nodes of a document of
    /// its size as policy files usually run (a node per 10–20 bytes, keys a quarter of the
    /// text), so that a large file's table is not grown, and copied, a dozen times over.
    pub fn new(source: &Arc<SourceFile>) -> Self {
        let text_len = source.text().len();
        Self {
            nodes: Vec::with_capacity(text_len / 10 + 1),
            arena: String::with_capacity(text_len / 4),
            source: Arc::clone(source),
        }
    }

    /// Records the root node (pointer `""`).
    pub fn root(&mut self, value: Span) -> NodeId {
        self.push(NO_PARENT, 0, 0, NodeSpan { key: None, value })
    }

    /// Records a member of a mapping.
    pub fn member(&mut self, parent: NodeId, key: &str, span: NodeSpan) -> NodeId {
        let start = self.arena.len();
        self.arena.push_str(key);
        self.push(parent.0, start, self.arena.len(), span)
    }

    /// Records an item of a sequence.
    pub fn item(&mut self, parent: NodeId, index: usize, value: Span) -> NodeId {
        let start = self.arena.len();
        // Writing a number to a `String` cannot fail.
        let _ = write!(self.arena, "{index}");
        self.push(
            parent.0,
            start,
            self.arena.len(),
            NodeSpan { key: None, value },
        )
    }

    /// Replaces the value span of a node (collections learn their end late).
    pub fn set_value(&mut self, id: NodeId, value: Span) {
        if let Some(node) = self.nodes.get_mut(id.0 as usize) {
            node.value = Packed::pack(value);
        }
    }

    /// The spans of the member `key` of `parent`, if one was recorded. Linear in the size of
    /// `parent`'s subtree: meant for the rare duplicate-key report, not for lookups.
    pub fn find_member(&self, parent: NodeId, key: &str) -> Option<NodeSpan> {
        let child = scan_child(&self.nodes, &self.arena, parent.0 as usize, key)?;
        self.nodes.get(child).map(|node| node.span(&self.source))
    }

    /// Freezes the builder into a table that can be queried by pointer.
    pub fn build(mut self) -> SpanTable {
        // The table lives as long as the snapshot; give back what growing the vectors
        // over-allocated (up to half of them).
        self.nodes.shrink_to_fit();
        self.arena.shrink_to_fit();
        SpanTable {
            nodes: self.nodes,
            arena: self.arena,
            index: OnceLock::new(),
            source: self.source,
        }
    }

    fn push(&mut self, parent: u32, seg_start: usize, seg_end: usize, span: NodeSpan) -> NodeId {
        // A document with four billion nodes (or keys) is far beyond any size limit;
        // saturate rather than panic if it ever happened.
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let id = u32::try_from(self.nodes.len()).unwrap_or(NO_PARENT - 1);
        self.nodes.push(Node {
            parent,
            seg_start: narrow(seg_start),
            seg_end: narrow(seg_end),
            key: Packed::pack_key(span.key),
            value: Packed::pack(span.value),
        });
        NodeId(id)
    }
}

/// Maps JSON pointers to the spans of the nodes of one document.
///
/// The lookup index is built on the first query: most documents are valid and never
/// queried, so parsing does not pay for it.
#[derive(Clone)]
pub struct SpanTable {
    nodes: Vec<Node>,
    arena: String,
    /// The children of every node, for lookups by pointer.
    index: OnceLock<ChildIndex>,
    /// The document, whose line index gives each span its line and column.
    source: Arc<SourceFile>,
}

impl std::fmt::Debug for SpanTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanTable")
            .field("source", self.source.path())
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

impl SpanTable {
    /// The spans of the node at `pointer` (`""` is the root), if the document has it.
    pub fn get(&self, pointer: &str) -> Option<NodeSpan> {
        match self.walk(pointer) {
            Walk::Found(index) => self.nodes.get(index).map(|node| node.span(&self.source)),
            Walk::Partial(..) | Walk::Invalid => None,
        }
    }

    /// The spans of the node at `pointer`, or of its closest existing ancestor: the place to
    /// report a missing child (such as a required property).
    pub fn nearest(&self, pointer: &str) -> Option<NodeSpan> {
        self.nearest_entry(pointer).map(|(_, span)| span)
    }

    /// Like [`SpanTable::nearest`], also returning the length of the prefix of `pointer`
    /// that names the node found (`pointer[..len]` is its pointer).
    pub fn nearest_entry(&self, pointer: &str) -> Option<(usize, NodeSpan)> {
        let (index, len) = match self.walk(pointer) {
            Walk::Found(index) => (index, pointer.len()),
            Walk::Partial(index, len) => (index, len),
            Walk::Invalid => (self.root_index()?, 0),
        };
        self.nodes
            .get(index)
            .map(|node| (len, node.span(&self.source)))
    }

    /// The spans of the member `key` of every item of the sequence at `list`, by item index:
    /// `None` for an item without that member. Empty when `list` is missing or not a
    /// sequence (a mapping whose keys read `0`, `1`, … in order counts as one).
    ///
    /// One pass over the nodes, without the lookup index: when every item is wanted this is
    /// far cheaper than a lookup per item, each of which visits nodes scattered over the
    /// table (a cache miss per step on a large file).
    pub fn item_members(&self, list: &str, key: &str) -> Vec<Option<NodeSpan>> {
        let Some(list) = self.scan(list) else {
            return Vec::new();
        };
        let mut members: Vec<Option<NodeSpan>> = Vec::new();
        let mut item = None;
        for (index, node) in subtree_after(&self.nodes, list) {
            if node.parent as usize == list {
                // Items are recorded in index order, spelled as JSON Pointer spells an index
                // (no leading zero); anything else is a mapping's member (such as "00").
                if node.segment(&self.arena) != members.len().to_string() {
                    return Vec::new();
                }
                members.push(None);
                item = Some(index);
            } else if Some(node.parent as usize) == item
                && node.segment(&self.arena) == key
                && let Some(slot) = members.last_mut()
            {
                *slot = Some(node.span(&self.source));
            }
        }
        members
    }

    /// The node at `pointer`, found by scanning children in document order (no index).
    fn scan(&self, pointer: &str) -> Option<usize> {
        let mut current = self.root_index()?;
        for segment in pointer_segments(pointer)? {
            current = scan_child(&self.nodes, &self.arena, current, &segment)?;
        }
        Some(current)
    }

    /// A copy in which the items of the sequence at `list` answer to new indices: the item
    /// that was at `kept[j]` is item `j`, and an item not in `kept` answers to no pointer.
    /// For a document whose list was filtered after it was parsed (the rules an untrusted
    /// layer keeps), so that the kept items still point at their own text.
    pub fn renumbered(&self, list: &str, kept: &[usize]) -> SpanTable {
        let mut table = SpanTable {
            nodes: self.nodes.clone(),
            arena: self.arena.clone(),
            index: OnceLock::new(),
            source: Arc::clone(&self.source),
        };
        let Some(list) = self.scan(list) else {
            return table;
        };
        for node in table.nodes.iter_mut().filter(|n| n.parent as usize == list) {
            let Ok(old) = node.segment(&self.arena).parse::<usize>() else {
                continue;
            };
            let start = table.arena.len();
            // Writing to a `String` cannot fail. A `-` never starts an index, so a dropped
            // item's segment matches no pointer.
            let _ = match kept.iter().position(|&k| k == old) {
                Some(new) => write!(table.arena, "{new}"),
                None => write!(table.arena, "-{old}"),
            };
            node.seg_start = u32::try_from(start).unwrap_or(u32::MAX);
            node.seg_end = u32::try_from(table.arena.len()).unwrap_or(u32::MAX);
        }
        table
    }

    /// The spans of the root node.
    #[cfg(test)]
    pub fn root(&self) -> Option<NodeSpan> {
        self.root_index()
            .and_then(|index| self.nodes.get(index))
            .map(|node| node.span(&self.source))
    }

    /// Every node's pointer and spans, in document order. Builds each pointer, so use it
    /// for tests and tooling rather than on hot paths.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (String, NodeSpan)> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .map(|(index, node)| (self.pointer_of(index), node.span(&self.source)))
    }

    /// The pointer of the node at `index`.
    #[cfg(test)]
    fn pointer_of(&self, index: usize) -> String {
        let mut chain = Vec::new();
        let mut current = index;
        while let Some(node) = self.nodes.get(current) {
            if node.parent == NO_PARENT {
                break;
            }
            chain.push(node.segment(&self.arena));
            current = node.parent as usize;
        }
        let mut pointer = String::new();
        for segment in chain.iter().rev() {
            push_segment(&mut pointer, segment);
        }
        pointer
    }

    fn root_index(&self) -> Option<usize> {
        self.nodes
            .first()
            .filter(|node| node.parent == NO_PARENT)
            .map(|_| 0)
    }

    /// Walks `pointer` from the root as far as the table allows.
    fn walk(&self, pointer: &str) -> Walk {
        let Some(mut current) = self.root_index() else {
            return Walk::Invalid;
        };
        if pointer.is_empty() {
            return Walk::Found(current);
        }
        let Some(rest) = pointer.strip_prefix('/') else {
            return Walk::Invalid;
        };
        let mut consumed = 0;
        for raw in rest.split('/') {
            let Some(segment) = unescape_segment(raw) else {
                return Walk::Partial(current, consumed);
            };
            match self.find(current, &segment) {
                Some(child) => {
                    current = child;
                    consumed += 1 + raw.len();
                }
                None => return Walk::Partial(current, consumed),
            }
        }
        Walk::Found(current)
    }

    /// The lookup index, built on first use.
    fn index(&self) -> &ChildIndex {
        self.index
            .get_or_init(|| ChildIndex::build(&self.nodes, &self.arena))
    }

    /// The child `segment` of the node `parent`.
    fn find(&self, parent: usize, segment: &str) -> Option<usize> {
        let index = self.index();
        let start = *index.starts.get(parent)? as usize;
        let end = *index.starts.get(parent.checked_add(1)?)? as usize;
        let group = index.children.get(start..end)?;
        let segment_of = |child: u32| {
            self.nodes
                .get(child as usize)
                .map_or("", |node| node.segment(&self.arena))
        };
        // A sequence's items are in index order: item `i` is the `i`th child.
        if let Ok(position) = segment.parse::<usize>()
            && let Some(&child) = group.get(position)
            && segment_of(child) == segment
        {
            return Some(child as usize);
        }
        let position = group
            .binary_search_by(|&child| segment_of(child).cmp(segment))
            .ok()?;
        group.get(position).map(|&child| child as usize)
    }
}

/// The nodes below `node`, in document order. Every parent comes before its children, so
/// the subtree is the run of nodes after `node` up to the first whose parent comes before
/// `node`.
fn subtree_after(nodes: &[Node], node: usize) -> impl Iterator<Item = (usize, &Node)> + '_ {
    nodes
        .iter()
        .enumerate()
        .skip(node.saturating_add(1))
        .take_while(move |(_, child)| child.parent as usize >= node)
}

/// The child `segment` of the node `parent`, by a scan of its subtree (no index).
fn scan_child(nodes: &[Node], arena: &str, parent: usize, segment: &str) -> Option<usize> {
    subtree_after(nodes, parent)
        .find(|(_, node)| node.parent as usize == parent && node.segment(arena) == segment)
        .map(|(index, _)| index)
}

/// The children of every node of a [`SpanTable`], grouped by parent: what a lookup walks.
///
/// Built in linear time from the nodes (which come in document order, every parent before
/// its children), and only the groups of mapping members are sorted, each on its own — far
/// cheaper than sorting all nodes at once, which is what a table of a large file would
/// otherwise cost on its first lookup.
#[derive(Clone, Debug, Default)]
struct ChildIndex {
    /// `children[starts[p]..starts[p + 1]]` are the children of node `p`.
    starts: Vec<u32>,
    // INVARIANT: a group whose segments are `0, 1, 2, …` in order (a sequence, or a mapping
    // whose keys read so) keeps document order, so that the `i`th child is item `i`; every
    // other group is sorted by segment, for a binary search.
    children: Vec<u32>,
}

impl ChildIndex {
    fn build(nodes: &[Node], arena: &str) -> Self {
        let parent_of = |node: &Node| {
            (node.parent != NO_PARENT && (node.parent as usize) < nodes.len())
                .then_some(node.parent as usize)
        };
        let mut starts = vec![0u32; nodes.len() + 1];
        for node in nodes {
            if let Some(parent) = parent_of(node)
                && let Some(count) = starts.get_mut(parent + 1)
            {
                *count += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] = starts[i].saturating_add(starts[i - 1]);
        }
        let mut next = starts.clone();
        let mut children = vec![0u32; starts.last().map_or(0, |&n| n as usize)];
        for (index, node) in nodes.iter().enumerate() {
            if let Some(parent) = parent_of(node)
                && let Some(slot) = next.get_mut(parent)
                && let Some(child) = children.get_mut(*slot as usize)
            {
                // Tables hold far fewer than 2^32 nodes (see `SpanTableBuilder::push`).
                *child = u32::try_from(index).unwrap_or(u32::MAX);
                *slot += 1;
            }
        }
        let segment_of = |child: u32| {
            nodes
                .get(child as usize)
                .map_or("", |node| node.segment(arena))
        };
        for window in starts.windows(2) {
            let Some(group) = children.get_mut(window[0] as usize..window[1] as usize) else {
                continue;
            };
            let counted = group
                .iter()
                .enumerate()
                .all(|(position, &child)| segment_of(child).parse::<usize>() == Ok(position));
            if !counted {
                group.sort_unstable_by(|&a, &b| segment_of(a).cmp(segment_of(b)));
            }
        }
        Self { starts, children }
    }
}

enum Walk {
    /// The whole pointer names this node.
    Found(usize),
    /// Only a prefix of the pointer (this many bytes) exists; this is its node.
    Partial(usize, usize),
    /// The pointer is malformed or the table is empty.
    Invalid,
}

/// Escapes one pointer segment (`~` → `~0`, `/` → `~1`).
pub fn escape_segment(segment: &str) -> Cow<'_, str> {
    if segment.contains(['~', '/']) {
        Cow::Owned(segment.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// Unescapes one pointer segment; `None` for an invalid escape such as `~2`.
pub fn unescape_segment(segment: &str) -> Option<Cow<'_, str>> {
    if !segment.contains('~') {
        return Some(Cow::Borrowed(segment));
    }
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(Cow::Owned(out))
}

/// Appends `/segment` (escaped) to a pointer.
pub fn push_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    pointer.push_str(&escape_segment(segment));
}

/// The pointer of the child `segment` of `pointer`.
pub fn join_pointer(pointer: &str, segment: &str) -> String {
    let mut joined = String::with_capacity(pointer.len() + segment.len() + 1);
    joined.push_str(pointer);
    push_segment(&mut joined, segment);
    joined
}

/// The unescaped segments of a pointer (`/a~1b/0` → `a/b`, `0`); `None` if malformed.
pub fn pointer_segments(pointer: &str) -> Option<Vec<Cow<'_, str>>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .map(unescape_segment)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::source::Format;

    /// One line of text, long enough for every span of these tests: the span at offset `n`
    /// is on line 1, column `n + 1`.
    fn source() -> Arc<SourceFile> {
        static SOURCE: std::sync::LazyLock<Arc<SourceFile>> = std::sync::LazyLock::new(|| {
            SourceFile::in_memory("test.yaml", "x".repeat(100_000), Format::Yaml)
        });
        Arc::clone(&SOURCE)
    }

    fn span(offset: usize) -> Span {
        Span {
            offset,
            len: 1,
            line: 1,
            column: u32::try_from(offset).unwrap() + 1,
        }
    }

    #[test]
    fn spans_are_stored_packed_and_read_back_whole() {
        // The first byte of a file is a real key; a sequence item has none.
        let first = Span {
            offset: 0,
            len: 3,
            line: 1,
            column: 1,
        };
        let mut builder = SpanTableBuilder::new(&source());
        let root = builder.root(span(0));
        builder.member(
            root,
            "k",
            NodeSpan {
                key: Some(first),
                value: span(5),
            },
        );
        let list = builder.member(root, "l", member(7));
        builder.item(list, 0, span(9));
        let table = builder.build();
        assert_eq!(table.get("/k").unwrap().key, Some(first));
        assert_eq!(table.get("/l/0").unwrap().key, None);
        assert_eq!(table.get("/l/0").unwrap().value, span(9));
        assert_eq!(table.root().unwrap().key, None);
        // Offsets past 4 GiB saturate instead of wrapping, short of the no-key marker.
        let huge = Span {
            offset: usize::MAX,
            ..first
        };
        assert_eq!(Packed::pack(huge).offset, u32::MAX - 1);
        assert_eq!(
            Packed::pack_key(Some(huge))
                .unpack_key(&source())
                .map(|s| s.offset),
            Some(u32::MAX as usize - 1)
        );
        assert_eq!(std::mem::size_of::<Node>(), 28);
    }

    #[test]
    fn lines_and_columns_come_from_the_source() {
        let text = "a: 1\r\nbé: [x, ü]\n  c: 2\n";
        let source = SourceFile::in_memory("t.yaml", text, Format::Yaml);
        let at = |needle: &str| source.first_line_span(text.find(needle).unwrap(), text.len());
        let mut builder = SpanTableBuilder::new(&source);
        let root = builder.root(at("a"));
        let list = builder.member(
            root,
            "bé",
            NodeSpan {
                key: Some(at("bé")),
                value: at("["),
            },
        );
        builder.item(list, 1, at("ü"));
        let c = NodeSpan {
            key: Some(at("c")),
            value: at("2"),
        };
        builder.member(root, "c", c);
        let table = builder.build();
        let key = table.get("/bé").unwrap().key.unwrap();
        assert_eq!((key.line, key.column, key.len), (2, 1, 12));
        // Columns count characters, lengths bytes: `[` is the fifth character on its line
        // (its sixth byte), `ü` the ninth.
        let value = table.get("/bé").unwrap().value;
        assert_eq!((value.line, value.column), (2, 5));
        let item = table.get("/bé/1").unwrap();
        assert_eq!((item.key, item.value.line, item.value.column), (None, 2, 9));
        assert_eq!(table.get("/c"), Some(c));
        assert_eq!((c.value.line, c.value.column), (3, 6));
    }

    fn member(offset: usize) -> NodeSpan {
        NodeSpan {
            key: Some(span(offset)),
            value: span(offset + 1),
        }
    }

    fn sample() -> SpanTable {
        let mut builder = SpanTableBuilder::new(&source());
        let root = builder.root(span(0));
        let tools = builder.member(root, "tools", member(10));
        let bash = builder.member(tools, "Bash", member(20));
        builder.member(bash, "timeout", member(30));
        builder.member(tools, "a/b~c", member(40));
        let rules = builder.member(root, "rules", member(50));
        for index in 0..12 {
            let item = builder.item(rules, index, span(60 + index));
            builder.member(item, "name", member(100 + index));
        }
        builder.build()
    }

    #[test]
    fn get_finds_exact_pointers() {
        let table = sample();
        let table_cases = [
            ("", Some(span(0))),
            ("/tools", Some(span(11))),
            ("/tools/Bash/timeout", Some(span(31))),
            ("/tools/a~1b~0c", Some(span(41))),
            ("/rules/0/name", Some(span(101))),
            ("/rules/11/name", Some(span(112))),
            ("/rules/10", Some(span(70))),
            ("/rules/12", None),
            ("/tools/Bash/max", None),
            ("/tools/a~2b", None),
            ("tools", None),
        ];
        for (pointer, expected) in table_cases {
            assert_eq!(
                table.get(pointer).map(|node| node.value),
                expected,
                "{pointer}"
            );
        }
        assert_eq!(table.get("/tools").unwrap().key, Some(span(10)));
    }

    #[test]
    fn nearest_falls_back_to_the_closest_ancestor() {
        let table = sample();
        let cases = [
            ("/tools/Bash/timeout/max", 31, "/tools/Bash/timeout"),
            ("/tools/Bash/handler/kind", 21, "/tools/Bash"),
            ("/missing", 0, ""),
            ("/rules/3/name", 104, "/rules/3/name"),
            ("not-a-pointer", 0, ""),
        ];
        for (pointer, offset, prefix) in cases {
            let (len, node) = table.nearest_entry(pointer).unwrap();
            assert_eq!(node.value.offset, offset, "{pointer}");
            assert_eq!(&pointer[..len], prefix, "{pointer}");
        }
    }

    #[test]
    fn iter_rebuilds_escaped_pointers_in_document_order() {
        let table = sample();
        let pointers: Vec<String> = table.iter().map(|(p, _)| p).take(6).collect();
        assert_eq!(
            pointers,
            [
                "",
                "/tools",
                "/tools/Bash",
                "/tools/Bash/timeout",
                "/tools/a~1b~0c",
                "/rules"
            ]
        );
    }

    #[test]
    fn segments_escape_and_unescape() {
        assert_eq!(escape_segment("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_segment("a~1b~0c").unwrap(), "a/b~c");
        assert_eq!(unescape_segment("~01").unwrap(), "~1");
        assert!(unescape_segment("~").is_none());
        assert_eq!(join_pointer("/a", "b/c"), "/a/b~1c");
        assert_eq!(
            pointer_segments("/a~1b/0").unwrap(),
            [Cow::Borrowed("a/b"), Cow::Borrowed("0")]
        );
        assert!(pointer_segments("a").is_none());
    }

    #[test]
    fn item_members_reads_one_member_of_every_item() {
        let table = sample();
        let names = table.item_members("/rules", "name");
        assert_eq!(names.len(), 12);
        assert_eq!(names[0], Some(member(100)));
        assert_eq!(names[11], Some(member(111)));
        assert_eq!(table.item_members("/rules", "decision"), vec![None; 12]);
        // Not a sequence, or missing.
        assert!(table.item_members("/tools", "timeout").is_empty());
        assert!(table.item_members("/hooks", "name").is_empty());
        assert!(table.item_members("rules", "name").is_empty());
    }

    #[test]
    fn a_mapping_whose_key_reads_as_a_number_is_not_a_sequence() {
        // Found by the property test below: key "00" was taken for item 0.
        let mut builder = SpanTableBuilder::new(&source());
        let root = builder.root(span(0));
        let list = builder.member(root, "00", member(1));
        builder.item(list, 0, span(2));
        let table = builder.build();
        assert!(table.item_members("", "0").is_empty());
        assert_eq!(table.item_members("/00", "0"), vec![None]);
    }

    #[test]
    fn find_member_reports_recorded_keys() {
        let mut builder = SpanTableBuilder::new(&source());
        let root = builder.root(span(0));
        builder.member(root, "a", member(5));
        assert_eq!(builder.find_member(root, "a"), Some(member(5)));
        assert_eq!(builder.find_member(root, "b"), None);
    }

    mod lookups {
        use super::*;
        use proptest::prelude::*;

        /// A random tree: each node is a mapping (keys from a small alphabet, so that
        /// numeric-looking and unordered keys occur) or a sequence.
        #[derive(Debug, Clone)]
        enum Tree {
            Leaf,
            Map(Vec<(String, Tree)>),
            Seq(Vec<Tree>),
        }

        fn tree() -> impl Strategy<Value = Tree> {
            let key = prop_oneof!["[0-9]{1,2}", "[a-c~/]{1,3}", Just(String::new()),];
            Just(Tree::Leaf).prop_recursive(4, 64, 6, move |inner| {
                prop_oneof![
                    prop::collection::vec((key.clone(), inner.clone()), 0..6).prop_map(|members| {
                        // Keys are unique in a mapping (the parsers reject duplicates).
                        let mut seen = std::collections::HashSet::new();
                        Tree::Map(
                            members
                                .into_iter()
                                .filter(|(k, _)| seen.insert(k.clone()))
                                .collect(),
                        )
                    }),
                    prop::collection::vec(inner, 0..12).prop_map(Tree::Seq),
                ]
            })
        }

        fn record(builder: &mut SpanTableBuilder, node: NodeId, tree: &Tree, next: &mut usize) {
            match tree {
                Tree::Leaf => {}
                Tree::Map(members) => {
                    for (key, child) in members {
                        *next += 1;
                        let id = builder.member(node, key, member(*next));
                        record(builder, id, child, next);
                    }
                }
                Tree::Seq(items) => {
                    for (index, child) in items.iter().enumerate() {
                        *next += 1;
                        let id = builder.item(node, index, span(*next));
                        record(builder, id, child, next);
                    }
                }
            }
        }

        proptest! {
            #[test]
            fn every_node_is_found_at_its_pointer_and_nothing_else(tree in tree()) {
                let mut builder = SpanTableBuilder::new(&source());
                let root = builder.root(span(0));
                let mut next = 0;
                record(&mut builder, root, &tree, &mut next);
                let table = builder.build();
                let all: Vec<(String, NodeSpan)> = table.iter().collect();
                for (pointer, node) in &all {
                    prop_assert_eq!(table.get(pointer), Some(*node), "{}", pointer);
                    // One pass finds what a lookup per item finds.
                    let prefix = format!("{pointer}/");
                    let children: Vec<&str> = all
                        .iter()
                        .filter_map(|(p, _)| p.strip_prefix(prefix.as_str()))
                        .filter(|rest| !rest.contains('/'))
                        .collect();
                    let counted = children
                        .iter()
                        .enumerate()
                        .all(|(index, segment)| *segment == index.to_string());
                    for key in ["a", "0", "b~"] {
                        let expected: Vec<Option<NodeSpan>> = if counted {
                            (0..children.len())
                                .map(|index| table.get(&join_pointer(&format!("{prefix}{index}"), key)))
                                .collect()
                        } else {
                            Vec::new()
                        };
                        prop_assert_eq!(table.item_members(pointer, key), expected, "{} {}", pointer, key);
                    }
                    // A child that was never recorded is not found.
                    for absent in ["zz", "99", "00"] {
                        let missing = join_pointer(pointer, absent);
                        if !all.iter().any(|(p, _)| *p == missing) {
                            prop_assert_eq!(table.get(&missing), None, "{}", missing);
                        }
                    }
                }
            }
        }
    }
}
