//! Which bolts of a topology read from the DSL take partial counts, and by which keys.

use crate::model::partials::Partials;

/// The partials of `text` loaded with `-c` overrides `config`.
fn partials(text: &str, config: &[&str]) -> Partials {
    let opts = super::LoadOptions {
        overrides: config.iter().map(|c| c.to_string()).collect(),
        filter: None,
    };
    let t = super::load_inline(text, &opts)
        .expect("a valid topology")
        .topology;
    Partials::of(&t)
}

#[test]
fn a_count_emitting_at_the_end_takes_sums_by_its_fields_or_its_first_input_field() {
    let p = partials("stdin | split | count(word) | stdout", &[]);
    assert_eq!(p.keys_of("count"), Some(&["word".to_string()][..]));
    let p = partials("stdin | split | count | stdout", &[]);
    assert_eq!(p.keys_of("count"), Some(&["word".to_string()][..]));
    let p = partials(
        "stdin(format=csv, header=true, fields=[a, b]) | count(b, a) | stdout",
        &[],
    );
    assert_eq!(
        p.keys_of("count"),
        Some(&["b".to_string(), "a".to_string()][..])
    );
}

#[test]
fn ticks_updates_state_two_inputs_and_the_switch_keep_tuples_whole() {
    for text in [
        "stdin | split | count(word, emit=tick) | stdout",
        "stdin | split | count(word, emit=update) | stdout",
        "stdin | split | count(word) stateful=true | stdout",
    ] {
        assert_eq!(partials(text, &[]).keys_of("count"), None, "{text}");
    }
    let off = partials(
        "stdin | split | count(word) | stdout",
        &["topology.partial.aggregation=false"],
    );
    assert_eq!(off.keys_of("count"), None);
    let stateful_elsewhere = partials(
        "stdin | split | count(word) | stdout",
        &["topology.stateful=true"],
    );
    assert_eq!(stateful_elsewhere.keys_of("count"), None);
}

#[test]
fn a_stateful_count_takes_folded_chunks_but_no_sums() {
    let words = ["word".to_string()];
    for text in [
        "stdin | split | count(word) stateful=true | stdout",
        "stdin | split | count(word) | stdout",
    ] {
        let p = partials(text, &["topology.stateful=true"]);
        assert_eq!(p.of_bolt("count"), None, "{text}: nothing summed ahead");
        assert_eq!(p.folded_counts_of("count"), Some(&words[..]), "{text}");
    }
    let plain = partials("stdin | split | count(word) | stdout", &[]);
    assert_eq!(plain.folded_counts_of("count"), Some(&words[..]));
    for (text, config) in [
        (
            "stdin | split | count(word, emit=update) | stdout",
            "topology.stateful=true",
        ),
        (
            "stdin | split | count(word) | stdout",
            "topology.partial.aggregation=false",
        ),
    ] {
        let p = partials(text, &[config, "topology.stateful=true"]);
        assert_eq!(p.folded_counts_of("count"), None, "{text} with {config}");
    }
    let agg = partials(
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[count]) | stdout",
        &["topology.stateful=true"],
    );
    assert_eq!(agg.folded_counts_of("aggregate"), None);
    assert_eq!(agg.of_bolt("aggregate"), None);
}

#[test]
fn a_plain_aggregate_or_top_takes_partial_states_and_a_windowed_one_does_not() {
    let p = partials(
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[count, avg(x), max(x)]) | stdout",
        &[],
    );
    let agg = p.of_bolt("aggregate").expect("takes partials");
    assert_eq!(agg.keys, vec!["s".to_string()]);
    assert!(agg.states);
    let p = partials(
        "stdin(format=csv, header=true, fields=[s, x]) | top(by=[s], n=2) | stdout",
        &[],
    );
    assert!(p.of_bolt("top").is_some());
    for text in [
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[count], window={tumbling: 10}) | stdout",
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[count], emit=update) | stdout",
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[count_distinct(x)], approx=true) | stdout",
        "stdin(format=csv, header=true, fields=[s, x]) | aggregate(by=[s], ops=[sum(x)]) stateful=true | stdout",
    ] {
        assert_eq!(partials(text, &[]).of_bolt("aggregate"), None, "{text}");
    }
}
