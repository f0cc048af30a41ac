//! Pure data: the typed model of policy files (engine config, tool contracts, rules, hooks,
//! gates, modes) with serde and schemars derives. Nothing here does I/O or async work.
