//! Tests of the DSL parser: the raw form it builds (with spans checked against the text),
//! default ids and groupings, syntax errors, and that no input makes it panic.

use super::parse;
use crate::syntax::raw::{RawComponent, RawTopology, RawValue, Span, Spanned};
use proptest::prelude::*;
use std::fmt::Write as _;

/// The text a span covers, for readable assertions.
fn at(text: &str, span: Span) -> &str {
    text.get(span.start..span.end).unwrap_or("<bad span>")
}

fn s<T: std::fmt::Debug>(text: &str, v: &Spanned<T>) -> String {
    format!("{:?}@`{}`", v.value, at(text, v.span))
}

fn component_line(text: &str, kind: &str, c: &RawComponent) -> String {
    let mut out = format!("{kind} ");
    if let Some(id) = &c.id {
        out += &s(text, id);
    }
    if let Some(t) = &c.ctype {
        let _ = write!(out, " type={}", s(text, t));
    }
    if let Some(a) = &c.args {
        let _ = write!(out, " args={}@`{}`", a.value.to_json(), at(text, a.span));
    }
    if let Some(p) = &c.parallelism {
        let _ = write!(out, " parallelism={}", s(text, p));
    }
    if let Some(t) = &c.tasks {
        let _ = write!(out, " tasks={}", s(text, t));
    }
    if let Some(f) = &c.fields {
        let names: Vec<_> = f.value.iter().map(|n| s(text, n)).collect();
        let _ = write!(out, " fields=[{}]", names.join(" "));
    }
    for (name, fields) in &c.streams {
        let names: Vec<_> = fields.iter().map(|n| n.value.as_str()).collect();
        let _ = write!(out, " stream {}=[{}]", s(text, name), names.join(" "));
    }
    if let Some(cmd) = &c.command {
        let parts: Vec<_> = cmd.value.iter().map(|n| s(text, n)).collect();
        let _ = write!(out, " command=[{}]", parts.join(" "));
    }
    if let Some(cwd) = &c.cwd {
        let _ = write!(out, " cwd={}", s(text, cwd));
    }
    if let Some(tick) = &c.tick {
        let _ = write!(out, " tick={}", tick.value.to_json());
    }
    for (k, v) in &c.config {
        let _ = write!(out, " config {}={}", k.value, v.value.to_json());
    }
    let _ = write!(out, " span=`{}`", at(text, c.span));
    out
}

/// Everything the parser produced, one item a line.
fn dump(text: &str) -> String {
    let raw = parse(text);
    dump_raw(text, &raw)
}

fn dump_raw(text: &str, raw: &RawTopology) -> String {
    let mut out = String::new();
    if let Some(n) = &raw.name {
        let _ = writeln!(out, "name {}", s(text, n));
    }
    for (k, v) in &raw.config {
        let _ = writeln!(
            out,
            "config {}={}@`{}`",
            s(text, k),
            v.value.to_json(),
            at(text, v.span)
        );
    }
    for c in &raw.spouts {
        let _ = writeln!(out, "{}", component_line(text, "spout", c));
    }
    for c in &raw.bolts {
        let _ = writeln!(out, "{}", component_line(text, "bolt", c));
    }
    for st in &raw.streams {
        let from = st.from.as_ref().map(|f| s(text, f)).unwrap_or_default();
        let to = st.to.as_ref().map(|f| s(text, f)).unwrap_or_default();
        let _ = write!(out, "stream {from} -> {to}");
        if let Some(g) = &st.grouping {
            let _ = write!(out, " grouping={}", s(text, g));
        }
        if let Some(a) = &st.grouping_args {
            let names: Vec<_> = a.value.iter().map(|n| s(text, n)).collect();
            let _ = write!(out, " [{}]", names.join(" "));
        }
        if let Some(id) = &st.stream {
            let _ = write!(out, " stream={}", s(text, id));
        }
        if let Some(n) = &st.name {
            let _ = write!(out, " name={}", s(text, n));
        }
        let _ = writeln!(out);
    }
    out += &errors_raw(raw);
    out
}

/// Diagnostics as `offset: message` (the real renderer lives in `diag`).
fn errors_raw(raw: &RawTopology) -> String {
    let mut out = String::new();
    for d in &raw.diagnostics {
        let start = d.span.map(|s| s.start).unwrap_or(0);
        let _ = write!(out, "{start}: {}", d.message);
        if let Some(h) = &d.help {
            let _ = write!(out, " (help: {h})");
        }
        out.push('\n');
    }
    out
}

fn errors(text: &str) -> String {
    errors_raw(&parse(text))
}

#[test]
fn one_line_wordcount() {
    insta::assert_snapshot!(dump("stdin | split x4 | count(word) x2 | stdout"));
}

#[test]
fn wordcount_file_matches_the_yaml_shape() {
    let text = include_str!("../../../topologies/wordcount.storm");
    let raw = parse(text);
    assert!(raw.diagnostics.is_empty(), "{}", errors_raw(&raw));
    insta::assert_snapshot!(dump_raw(text, &raw));
}

#[test]
fn component_options_and_named_streams() {
    let text = "name multi\n\
        nums = shell(python3, nums.py) streams={evens: [n], odds: [n]} fields=[n] cwd=scripts tick=5s\n\
        nums | [fields n stream=evens name=e] even = log tasks=4 *2 config={topology.debug: true}\n\
        nums | [global stream=odds] log\n";
    insta::assert_snapshot!(dump(text));
}

#[test]
fn config_statement_reads_yaml_like_values() {
    let text = "config topology.workers=2 topology.debug=true supervisor.slots.ports=[6700, 6701]\nconfig x.y=\"a b\" z=1.5 n=null\nstdin | stdout";
    insta::assert_snapshot!(dump(text));
}

#[test]
fn references_join_pipelines_and_derived_ids_stay_unique() {
    let text = "stdin | split | stdout; split | log\nstdin | filter('len(word) > 3') | filter(\"word contains 'a'\") | log";
    let raw = parse(text);
    assert!(raw.diagnostics.is_empty(), "{}", errors_raw(&raw));
    let ids: Vec<_> = raw
        .spouts
        .iter()
        .chain(&raw.bolts)
        .filter_map(|c| c.id.as_ref().map(|i| i.value.as_str()))
        .collect();
    assert_eq!(
        ids,
        ["stdin", "split", "stdout", "log", "filter", "filter2"]
    );
    let edges: Vec<_> = raw
        .streams
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{}>{}",
                s.from.as_ref()?.value,
                s.to.as_ref()?.value
            ))
        })
        .collect();
    assert_eq!(
        edges,
        [
            "stdin>split",
            "split>stdout",
            "split>log",
            "stdin>filter",
            "filter>filter2",
            "filter2>log"
        ]
    );
}

#[test]
fn a_pipeline_never_refers_back_into_itself() {
    let raw = parse("stdin | split | split; split2 | log");
    assert!(raw.diagnostics.is_empty(), "{}", errors_raw(&raw));
    let edges: Vec<_> = raw
        .streams
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{}>{}",
                s.from.as_ref()?.value,
                s.to.as_ref()?.value
            ))
        })
        .collect();
    assert_eq!(edges, ["stdin>split", "split>split2", "split2>log"]);
}

#[test]
fn explicit_ids_may_be_referenced_before_their_definition() {
    let text = "words | count(word)\nwords = split\nstdin | words";
    let raw = parse(text);
    assert!(raw.diagnostics.is_empty(), "{}", errors_raw(&raw));
    assert_eq!(raw.bolts.len(), 2);
    assert_eq!(raw.spouts.len(), 1);
    let first = &raw.streams[0];
    assert_eq!(
        first.grouping.as_ref().map(|g| g.value.as_str()),
        Some("fields")
    );
}

#[test]
fn count_without_fields_is_fed_globally_and_explicit_grouping_wins() {
    let raw = parse("stdin | count | stdout; stdin | [shuffle] c2 = count(line)");
    let groupings: Vec<_> = raw
        .streams
        .iter()
        .filter_map(|s| s.grouping.as_ref().map(|g| g.value.clone()))
        .collect();
    assert_eq!(groupings, ["global", "shuffle", "shuffle"]);
}

#[test]
fn shell_with_no_input_is_a_spout_and_with_input_a_bolt() {
    let raw =
        parse("src = shell(node, s.js) fields=[w] | b = shell(python3, b.py) fields=[w] | stdout");
    assert_eq!(raw.spouts.len(), 1);
    assert_eq!(
        raw.spouts[0].id.as_ref().map(|i| i.value.as_str()),
        Some("src")
    );
    assert_eq!(raw.bolts.len(), 2);
}

#[test]
fn pipelines_continue_across_lines_and_comments() {
    let text =
        "# header\nlines = stdin   # the input\n  | split\n  # between\n  | [global] stdout\n";
    let raw = parse(text);
    assert!(raw.diagnostics.is_empty(), "{}", errors_raw(&raw));
    assert_eq!(raw.streams.len(), 2);
}

#[test]
fn name_defaults_when_absent() {
    let raw = parse("stdin | stdout");
    assert_eq!(
        raw.name.map(|n| (n.value, n.span)),
        Some(("inline".to_string(), Span::new(0, 0)))
    );
    let raw = super::parse_named("stdin | stdout", "wc");
    assert_eq!(raw.name.map(|n| n.value), Some("wc".to_string()));
}

#[test]
fn values_in_args_keep_their_types() {
    let raw = parse("generate(count=10, values=[a, 2, 3.5, true], rate=~) | discard");
    let args = raw.spouts[0].args.as_ref().map(|a| a.value.to_json());
    assert_eq!(
        args,
        Some(serde_json::json!({"count": 10, "values": ["a", 2, 3.5, true], "rate": null}))
    );
    let raw = parse("generate(100) | discard");
    let count = raw.spouts[0]
        .args
        .as_ref()
        .and_then(|a| a.value.get("count"))
        .map(|v| v.value.clone());
    assert_eq!(count, Some(RawValue::Int(100)));
}

#[test]
fn syntax_errors() {
    let cases = [
        "stdin | ",
        "stdin | split x4 ) | stdout",
        "stdin | count(word | stdout",
        "stdin | split | [fields word stdout",
        "lines = | split",
        "stdin | split(\"a\\qb\") | stdout",
        "stdin | split x99999999999999999999999",
        "config workers",
        "name",
        "stdin | stdout \"unterminated",
        "stdin || stdout",
        "§ | stdout",
        "name: wordcount",
        "stdin -> split",
        "stdin | split x4 count",
        "stdin | filter(len(word) > 3) | stdout",
    ];
    let mut out = String::new();
    for case in cases {
        let _ = writeln!(out, "{case}\n{}", errors(case));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn semantic_errors_of_the_front_end() {
    let cases = [
        "stdin | stdout(x)",
        "stdin | filter(a, b) | stdout",
        "stdin | split tasks=two parallelism=[1]",
        "stdin | split fields=[a {b: c}] cwd=[x]",
        "stdin | split x2 x3",
        "stdin | split paralelism=3",
        "stdin | [shuffle strem=x] stdout",
        "lines = stdin; lines x2 | stdout",
        "name a; name b; stdin | stdout",
        "count(word, fields=[w]) | stdout",
        "config a=1 a=2",
    ];
    let mut out = String::new();
    for case in cases {
        let _ = writeln!(out, "{case}\n{}", errors(case));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn every_erroneous_statement_is_reported() {
    let raw = parse("stdin | split )\nok = stdin\nstdin | [fields\n  | x\nstdout = ;\n");
    let offsets: Vec<_> = raw
        .diagnostics
        .iter()
        .filter_map(|d| d.span.map(|s| s.start))
        .collect();
    assert_eq!(offsets.len(), 3, "{}", errors_raw(&raw));
    assert_eq!(raw.spouts.len(), 1);
}

/// Inputs built from the DSL's own tokens, to reach deep into the grammar.
fn token_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "stdin", "split", "count", "(", ")", "[", "]", "{", "}", "|", "=", ";", "\n", " ", "x4",
        "*2", "word", ",", ":", "\"s\"", "'q'", "\"", "'", "\\", "#c\n", "fields", "name",
        "config", "tasks=", "1.5", "-", "é", "\r\n", "a.b", "global",
    ]);
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

fn check_span(text: &str, span: Span) {
    assert!(
        span.start <= span.end && span.end <= text.len(),
        "{span:?} in {text:?}"
    );
    assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
}

/// Every span the parser produced lies inside the text, on character boundaries.
fn check_spans(text: &str, raw: &RawTopology) {
    let mut spans: Vec<Span> = raw.diagnostics.iter().filter_map(|d| d.span).collect();
    spans.extend(raw.name.iter().map(|n| n.span));
    for (k, v) in &raw.config {
        spans.extend([k.span, v.span]);
    }
    for c in raw.spouts.iter().chain(&raw.bolts) {
        spans.push(c.span);
        spans.extend(c.id.iter().chain(&c.ctype).map(|x| x.span));
        spans.extend(c.args.iter().map(|x| x.span));
        spans.extend(c.parallelism.iter().chain(&c.tasks).map(|x| x.span));
        spans.extend(
            c.command
                .iter()
                .flat_map(|x| x.value.iter().map(|p| p.span)),
        );
    }
    for st in &raw.streams {
        spans.push(st.span);
        spans.extend(
            st.from
                .iter()
                .chain(&st.to)
                .chain(&st.grouping)
                .map(|x| x.span),
        );
        spans.extend(
            st.grouping_args
                .iter()
                .flat_map(|a| a.value.iter().map(|f| f.span)),
        );
    }
    for span in spans {
        check_span(text, span);
    }
}

/// One component of a generated pipeline: (id, type, parallelism, grouping into it).
type Stage = (String, &'static str, Option<u8>, Option<&'static str>);

fn pipeline_stages() -> impl Strategy<Value = Vec<Stage>> {
    let bolt = (
        "[a-z][a-z0-9_]{0,6}",
        prop::sample::select(vec!["split", "filter", "log", "stdout", "discard", "chaos"]),
        prop::option::of(1u8..9),
        prop::option::of(prop::sample::select(vec![
            "shuffle", "global", "all", "none",
        ])),
    );
    prop::collection::vec(bolt, 1..6).prop_map(|bolts| {
        let mut stages: Vec<Stage> = vec![("src".into(), "stdin", None, None)];
        for (k, (id, ctype, p, g)) in bolts.into_iter().enumerate() {
            stages.push((format!("{id}_{k}"), ctype, p, g));
        }
        stages
    })
}

/// Write generated stages as DSL, with or without explicit ids, on one line or several.
fn render(stages: &[Stage], explicit_ids: bool, multiline: bool) -> String {
    let mut out = String::new();
    for (k, (id, ctype, p, g)) in stages.iter().enumerate() {
        if k > 0 {
            out += if multiline { "\n  | " } else { " | " };
        }
        if let Some(g) = g {
            out += &format!("[{g}] ");
        }
        if explicit_ids {
            out += &format!("{id} = ");
        }
        out += ctype;
        if let Some(p) = p {
            out += &format!(" x{p}");
        }
    }
    out
}

proptest! {
    #[test]
    fn random_text_never_panics(text in "\\PC{0,60}") {
        let raw = parse(&text);
        check_spans(&text, &raw);
    }

    #[test]
    fn token_soup_never_panics(text in token_soup()) {
        let raw = parse(&text);
        check_spans(&text, &raw);
    }

    #[test]
    fn generated_pipelines_read_back(stages in pipeline_stages(), explicit in any::<bool>(), multiline in any::<bool>()) {
        let text = render(&stages, explicit, multiline);
        let raw = parse(&text);
        prop_assert!(raw.diagnostics.is_empty(), "{}\n{}", text, errors_raw(&raw));
        check_spans(&text, &raw);
        let components: Vec<_> = raw.spouts.iter().chain(&raw.bolts).collect();
        prop_assert_eq!(components.len(), stages.len());
        for (c, (id, ctype, p, _)) in components.iter().zip(&stages) {
            prop_assert_eq!(c.ctype.as_ref().map(|t| t.value.as_str()), Some(*ctype));
            prop_assert_eq!(c.parallelism.as_ref().map(|x| x.value), p.map(i64::from));
            if explicit {
                prop_assert_eq!(c.id.as_ref().map(|i| i.value.as_str()), Some(id.as_str()));
            }
        }
        prop_assert_eq!(raw.streams.len(), stages.len() - 1);
        for (st, (_, _, _, g)) in raw.streams.iter().zip(&stages[1..]) {
            prop_assert_eq!(
                st.grouping.as_ref().map(|x| x.value.as_str()),
                Some(g.unwrap_or("shuffle"))
            );
        }
    }

    #[test]
    fn mutated_wordcount_never_panics(pos in 0usize..200, insert in "\\PC{0,3}", cut in 0usize..4) {
        let base = include_str!("../../../topologies/wordcount.storm");
        let mut pos = pos.min(base.len());
        while !base.is_char_boundary(pos) { pos -= 1; }
        let mut end = (pos + cut).min(base.len());
        while !base.is_char_boundary(end) { end += 1; }
        let text = format!("{}{}{}", &base[..pos], insert, &base[end..]);
        let raw = parse(&text);
        check_spans(&text, &raw);
    }
}

#[test]
fn documented_examples_parse_cleanly() {
    let doc = include_str!("../../../docs/dsl.md");
    let mut blocks = 0;
    for block in doc.split("```storm\n").skip(1) {
        let text = block.split("```").next().unwrap_or_default();
        let raw = parse(text);
        assert!(raw.diagnostics.is_empty(), "{text}\n{}", errors_raw(&raw));
        assert!(!raw.spouts.is_empty(), "{text}");
        blocks += 1;
    }
    assert!(blocks >= 5, "found {blocks} examples");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let text = format!("generate(values={}) | log", "[".repeat(100_000));
    assert!(errors(&text).contains("nested more than 64 levels deep"));
    let ok = format!(
        "generate(values={}{}) | log",
        "[".repeat(10),
        "]".repeat(10)
    );
    assert_eq!(errors(&ok), "");
}
