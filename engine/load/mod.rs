//! Files to validated model: syntax (YAML/TOML with a span for every node), JSON Schema
//! validation, typed deserialisation, and the diagnostics (codes, spans, renderers) every
//! stage reports through.
