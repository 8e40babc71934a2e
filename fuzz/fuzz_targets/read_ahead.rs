//! The line spout's read-ahead (`parse::Prefetch`) against the parser alone: for JSON lines and
//! for CSV with a header (typed or not), the lines of the input taken as the spout takes them (what the reader
//! thread read ahead wherever the parser accepts it) give exactly the parser's records and
//! errors. The first byte picks the format; never a panic, never a difference.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::components::parse::{spec::Spec, Parser};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let args = match pick % 4 {
        0 => serde_json::json!({"format": "json", "fields": ["a", "b", "c.d"]}),
        1 => serde_json::json!({"format": "json", "fields": ["a", "b"], "types": {"a": "int"}}),
        2 => serde_json::json!({"format": "csv", "header": true, "fields": ["b", "a"]}),
        _ => serde_json::json!({"format": "csv", "header": true, "fields": ["b", "a"],
                                "types": {"a": "float", "b": "int"}}),
    };
    let Some(args) = args.as_object() else {
        return;
    };
    let Ok(spec) = Spec::from_args(args) else {
        return;
    };
    let (Ok(mut alone), Ok(mut with)) = (Parser::new(&spec), Parser::new(&spec)) else {
        return;
    };
    let Some(mut ahead) = with.read_ahead(&spec) else {
        panic!("JSON and CSV read ahead");
    };
    for line in text.split('\n') {
        let expected = alone.parse(line);
        let got = match ahead.read(line).and_then(|v| with.prefetched(v)) {
            Some(values) => Ok(Some(values)),
            None => with.parse(line),
        };
        assert_eq!(got, expected, "{line:?}");
    }
});
