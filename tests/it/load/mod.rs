//! Reading, parsing and layering policy files: diagnostics, YAML/TOML equivalence, fuzzing, the shipped schemas and policies.

mod file_names;
mod layers_override;
mod policies_equivalence;
mod rule_mistakes;
mod set_limits;
mod shipped_examples;
