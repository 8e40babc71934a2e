//! JSON field extraction's fast path (`parse/json_scan.rs`) against the general reader
//! (serde_json) and against serde_json's own tree: wherever the fast path answers, the general
//! reader answers the same values; wherever serde_json's tree reads the line, the general reader
//! gives what the tree holds at each path (null through a non-object, the last of a repeated
//! key), and a line that is JSON but not an object is an error. The first byte picks the
//! paths; never a panic, never a difference.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::components::parse::json_readers;
use storm::tuple::Value;

/// What serde_json's tree holds at `path`: null when missing or through a non-object.
fn reference(doc: &serde_json::Value, path: &[String]) -> Value {
    let mut at = doc;
    for key in path {
        match at.get(key) {
            Some(next) if at.is_object() => at = next,
            _ => return Value::Null,
        }
    }
    Value::from_json(at)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(line) = std::str::from_utf8(rest) else {
        return;
    };
    let sets: [&[&str]; 4] = [
        &["a", "b", "c.d"],
        &["a", "a.b", "b"],
        &["c.d.e", "b", "b"],
        &["level", "service", "status"],
    ];
    let paths: Vec<Vec<String>> = sets[usize::from(pick) % sets.len()]
        .iter()
        .map(|p| p.split('.').map(str::to_string).collect())
        .collect();
    let (fast, general) = json_readers(&paths, line);
    if let Some(fast) = &fast {
        assert_eq!(general.as_ref(), Ok(fast), "fast path on {line:?}");
    }
    if let Ok(tree) = serde_json::from_str::<serde_json::Value>(line) {
        if !tree.is_object() {
            assert_eq!(general, Err("not a JSON object".to_string()), "{line:?}");
            return;
        }
        let expected: Vec<Value> = paths.iter().map(|p| reference(&tree, p)).collect();
        assert_eq!(general, Ok(expected), "general reader on {line:?}");
    }
});
