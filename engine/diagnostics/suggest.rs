//! "Did you mean": the known name a misspelt one most likely meant.

/// The candidate closest to `input`, if it is close enough to be a likely typo: at most a
/// third of the shorter name's characters apart (at least one) by edit distance, ignoring
/// case (adjacent swaps count once); the input itself is never suggested.
pub fn closest<'c>(input: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let lowered = input.to_lowercase();
    candidates
        .into_iter()
        .filter_map(|candidate| {
            if candidate == input {
                return None;
            }
            let distance = strsim::damerau_levenshtein(&lowered, &candidate.to_lowercase());
            let budget = (input.chars().count().min(candidate.chars().count()) / 3).max(1);
            (distance <= budget).then_some((distance, candidate))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn only_likely_typos_are_suggested() {
        let keys = ["timeout", "handler", "aliases"];
        assert_eq!(closest("timout", keys), Some("timeout"));
        assert_eq!(closest("Handler", keys), Some("handler"));
        assert_eq!(closest("hnadler", keys), Some("handler"));
        assert_eq!(closest("budget", keys), None);
        assert_eq!(closest("timeout", keys), None);
        assert_eq!(closest("", keys), None);
    }
}
