//! What a CSV/TSV header lacks: the message when `fields` (or `types`) names a column the
//! header does not have. It names the column, shows the header's columns with their edge
//! spaces made visible (`·`), and suggests the closest one. Reading by position instead
//! would give a neighbouring column's values under the asked name: never done.

/// The error for `name`, which none of the header's `columns` is.
pub(crate) fn missing(name: &str, columns: &[String]) -> String {
    let shown: Vec<String> = columns.iter().map(|c| visible(c)).collect();
    let mut msg = format!("the header has no column `{name}`");
    if let Some(c) = columns.iter().find(|c| c.trim() == name) {
        msg.push_str(&format!(
            " (its column {} has a space in its name: write the name with the space in \
             `fields`, or remove the space from the header)",
            visible(c)
        ));
    } else if let Some(c) = closest(name, columns) {
        msg.push_str(&format!(" (did you mean {}?)", visible(c)));
    }
    msg.push_str(&format!("; the header's columns: {}", shown.join(", ")));
    msg
}

/// The column most like `name`, if one is close.
fn closest<'a>(name: &str, columns: &'a [String]) -> Option<&'a String> {
    columns
        .iter()
        .map(|c| (strsim::jaro_winkler(name, c.trim()), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A column name in quotes, a space at either end shown as `·` and control characters escaped.
fn visible(name: &str) -> String {
    let body = name.trim_matches(' ');
    let lead = name.len() - name.trim_start_matches(' ').len();
    let trail = if body.is_empty() {
        0
    } else {
        name.len() - name.trim_end_matches(' ').len()
    };
    let escaped: String = body.escape_debug().collect();
    format!("\"{}{escaped}{}\"", "·".repeat(lead), "·".repeat(trail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_typo_gets_a_suggestion_and_the_columns() {
        assert_eq!(
            missing("wether", &cols(&["date", "weather", "wind"])),
            "the header has no column `wether` (did you mean \"weather\"?); the header's columns: \"date\", \"weather\", \"wind\""
        );
    }

    #[test]
    fn a_space_after_a_comma_is_shown() {
        let msg = missing("weather", &cols(&["date", " weather"]));
        assert!(msg.contains("\"·weather\" has a space"), "{msg}");
        assert!(msg.ends_with("\"date\", \"·weather\""), "{msg}");
        assert_eq!(visible("a b "), "\"a b·\"");
        assert_eq!(visible("tab\there"), "\"tab\\there\"");
    }
}
