//! Reading, parsing and layering policy files: diagnostics, YAML/TOML equivalence, fuzzing, the shipped schemas and policies.

mod diagnostics;
mod equivalence;
mod file_names;
mod fuzz;
mod layers_override;
mod policies_equivalence;
mod rule_mistakes;
mod schemas;
mod set_limits;
mod shipped_examples;
