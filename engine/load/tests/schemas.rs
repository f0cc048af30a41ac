//! The JSON Schemas in `schemas/` are generated from the Rust model; this test fails when
//! they are stale. Regenerate with `TOOLGATE_UPDATE_SCHEMAS=1 cargo test --test it load::schemas`.

use std::path::Path;

#[test]
fn schemas_match_the_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("TOOLGATE_UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    let report = (
        "diff.schema.json",
        crate::review::report::generated_schema(),
    );
    for (name, schema) in crate::model::schema::generated()
        .into_iter()
        .chain([report])
    {
        let path = dir.join(name);
        let expected = format!("{}\n", serde_json::to_string_pretty(&schema).unwrap());
        let actual = std::fs::read_to_string(&path).unwrap_or_default();
        if actual != expected {
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, expected).unwrap();
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?}: run `TOOLGATE_UPDATE_SCHEMAS=1 cargo test --test it load::schemas` and commit schemas/"
    );
}
