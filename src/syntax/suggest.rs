//! "Did you mean": the closest of the known words to a mistyped one.

/// The closest candidate to `word`, if one is close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    // Similar overall (Jaro-Winkler) and only a few edits away, so long shared prefixes such
    // as `topology.` do not make unrelated keys look alike.
    let max_edits = (lower.chars().count() / 3).max(3);
    candidates
        .map(|c| (c, c.to_ascii_lowercase()))
        .filter(|(_, lc)| strsim::levenshtein(&lower, lc) <= max_edits)
        .map(|(c, lc)| (strsim::jaro_winkler(&lower, &lc), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::suggest;

    #[test]
    fn suggestions_are_close_edits_only() {
        let keys = ["topology.workers", "topology.debug"];
        assert_eq!(
            suggest("topology.wokers", keys.into_iter()),
            Some("topology.workers")
        );
        assert_eq!(suggest("topology.k99999", keys.into_iter()), None);
        assert_eq!(
            suggest("splitter", ["split", "count"].into_iter()),
            Some("split")
        );
        assert_eq!(suggest("xyz", ["split", "count"].into_iter()), None);
    }
}
