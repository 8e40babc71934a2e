//! A line spout's position in a checkpoint, and going on from one: a map of
//! - `input`: `"file"` or `"stdin"` (a position only restores the same kind),
//! - `offset`: the raw input byte after the last line emitted (before any UTF-8 replacement
//!   or `\r\n` trimming; with `format:`, after the last record finished),
//! - `kept`: the lines not yet acked (in flight, or failed and not re-emitted), oldest first:
//!   strings, or with `format:` the list of values each gave,
//! - `header` (with a CSV/TSV header read): its column names, so the resumed reader, which
//!   starts after it, knows them,
//! - `json` (JSON read as a stream of values): `"array"` between the elements of a top-level
//!   array, `"values"` between values, so the resumed reader goes on in the same state,
//! - `line` (with `file_line` asked for): the number of the line `offset` is after, so a
//!   resumed spout numbers on from it,
//! - `files` (a glob, `input` `"file-glob"`): `[device, inode, offset, line, fingerprint]` of
//!   each of its files read (the fingerprint once the file has one; older positions have
//!   none), so each goes on from where it was (`offset` is then unused),
//! - `file` (a followed file): `[device, inode, fingerprint]` of the file `offset` is in (the
//!   fingerprint, a checksum of its first 256 bytes as a signed 64-bit integer, once it has
//!   them; older positions have `[device, inode]`), so a file rotated while the run was
//!   stopped is read from its start, not from an offset in another file, and a new file that
//!   got the old one's inode is not taken for it.

use super::{follow, Input, KeptLine, LineSpout};
use crate::tuple::Value;
use std::collections::BTreeMap;

/// Where `spout` is. Lines kept as read ahead are read again into their values first; one
/// that cannot be (never expected) is saved as its text, which a resume refuses by name.
pub(super) fn of(spout: &mut LineSpout) -> Value {
    if let Err(e) = spout.parse_kept() {
        tracing::error!("{}", e.0);
    }
    let item = |k: &KeptLine| match k {
        KeptLine::Parsed(values) => Value::List(Box::new(values.to_vec())),
        other => Value::str(other.text()),
    };
    let mut kept: Vec<Value> = spout.replay.kept().into_iter().map(item).collect();
    kept.extend(spout.restored.iter().map(item));
    let mut map = BTreeMap::new();
    map.insert("input".to_string(), Value::str(spout.kind));
    map.insert("offset".to_string(), Value::Int(spout.offset as i64));
    map.insert("kept".to_string(), Value::List(Box::new(kept)));
    if spout.placement.is_some() {
        map.insert("line".to_string(), Value::Int(spout.line as i64));
    }
    if let Some(g) = &spout.glob {
        let prints = g.prints.lock().unwrap_or_else(|e| e.into_inner());
        let file = |(id, (offset, line)): (&super::follow::FileId, &(u64, u64))| {
            let items = [id.dev, id.ino, *offset, *line].map(|n| Value::Int(n as i64));
            let mut items = items.to_vec();
            // The fingerprint's 64 bits as a signed integer, once the file has one.
            items.extend(prints.get(id).map(|p| Value::Int(*p as i64)));
            Value::List(Box::new(items))
        };
        let files = g.files.iter().map(file).collect();
        map.insert("files".to_string(), Value::List(Box::new(files)));
    }
    let header = spout
        .parsing
        .as_ref()
        .and_then(|p| p.parser.header_columns());
    if let Some(columns) = header {
        let names = columns.iter().map(|c| Value::str(c)).collect();
        map.insert("header".to_string(), Value::List(Box::new(names)));
    }
    if let Some((f, id)) = spout.follow.as_ref().and_then(|f| Some((f, f.file?))) {
        let mut ident = vec![Value::Int(id.dev as i64), Value::Int(id.ino as i64)];
        let prints = f.prints.lock().unwrap_or_else(|e| e.into_inner());
        // The fingerprint's 64 bits as a signed integer.
        if let Some(print) = prints.get(&id) {
            ident.push(Value::Int(*print as i64));
        }
        map.insert("file".to_string(), Value::List(Box::new(ident)));
    }
    let stream = spout.parsing.as_ref().and_then(|p| p.parser.json_stream());
    if let Some(in_array) = stream {
        let state = if in_array { "array" } else { "values" };
        map.insert("json".to_string(), Value::str(state));
    }
    Value::Map(Box::new(map))
}

/// Go on from `position` (before reading started).
pub(super) fn restore(spout: &mut LineSpout, position: Value) -> Result<(), String> {
    let Value::Map(map) = position else {
        return Err("the position is not a map".into());
    };
    let kind = map.get("input").and_then(Value::as_str);
    if kind != Some(spout.kind) {
        let kind = kind.unwrap_or("(none)");
        return Err(format!(
            "the position is of a `{kind}` spout, this one reads {}",
            spout.kind
        ));
    }
    let offset = match map.get("offset") {
        Some(Value::Int(n)) if *n >= 0 => *n as u64,
        other => {
            return Err(format!(
                "the position's offset is not a byte count: {other:?}"
            ))
        }
    };
    let Some(input) = &spout.input else {
        return Err("reading had already begun".into());
    };
    if let Some(g) = spout.glob.as_mut() {
        let (files, prints) = glob_files(map.get("files"))?;
        g.files = files;
        *g.prints.lock().unwrap_or_else(|e| e.into_inner()) = prints;
        if let Some(f) = spout.follow.as_mut() {
            f.resumed = true;
        }
    } else if let Some(f) = spout.follow.as_mut() {
        // The reader thread sees whether it is still the same file, and how long.
        let ident = file_id(map.get("file"))?;
        f.file = ident.map(|i| i.id);
        if let Some(follow::Ident { id, print: Some(p) }) = ident {
            f.prints
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, p);
        }
        f.resumed = true;
    } else if let Input::File(path) = input {
        let len = std::fs::metadata(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        if offset > len {
            return Err(format!(
                "the position's offset {offset} is past the end of {} ({len} bytes): \
                 is it the same file?",
                path.display()
            ));
        }
    }
    if let Some(header) = map.get("header") {
        restore_header(spout, header)?;
    }
    if let Some(state) = map.get("json") {
        let Some(p) = spout.parsing.as_mut() else {
            return Err("the position is of a spout reading JSON values".into());
        };
        p.parser.resume_json_stream(state.as_str() == Some("array"));
    }
    spout.start_line = match map.get("line") {
        None => None,
        Some(Value::Int(n)) if *n >= 0 => Some(*n as u64),
        Some(other) => return Err(format!("the position's line is not a count: {other:?}")),
    };
    spout.line = spout.start_line.unwrap_or_default();
    spout.restored = kept_lines(spout, map.get("kept"))?.into();
    spout.start = offset;
    spout.offset = offset;
    Ok(())
}

/// A glob's files in a position: `[device, inode, offset, line]` each, and the fingerprint
/// after them when the file had one.
fn glob_files(
    value: Option<&Value>,
) -> Result<
    (
        super::glob::Starts,
        std::collections::HashMap<follow::FileId, u64>,
    ),
    String,
> {
    let bad = || {
        "the position's files are not [device, inode, offset, line, fingerprint] lists".to_string()
    };
    let Some(Value::List(items)) = value else {
        return Err(bad());
    };
    let mut files = super::glob::Starts::new();
    let mut prints = std::collections::HashMap::new();
    for item in items.iter() {
        let Value::List(parts) = item else {
            return Err(bad());
        };
        let (counts, print) = match parts.as_slice() {
            [counts @ .., Value::Int(p)] if parts.len() == 5 => (counts, Some(*p as u64)),
            counts => (counts, None),
        };
        let n = |v: &Value| match v {
            Value::Int(n) if *n >= 0 => Some(*n as u64),
            _ => None,
        };
        let counts: Option<Vec<u64>> = counts.iter().map(n).collect();
        match counts.as_deref() {
            Some(&[dev, ino, offset, line]) => {
                let id = follow::FileId { dev, ino };
                files.insert(id, (offset, line));
                if let Some(p) = print {
                    prints.insert(id, p);
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok((files, prints))
}

/// A followed file's `[device, inode]` or `[device, inode, fingerprint]` in a position.
fn file_id(value: Option<&Value>) -> Result<Option<follow::Ident>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = || "the position's file is not [device, inode, fingerprint]".to_string();
    let Value::List(items) = value else {
        return Err(bad());
    };
    let (dev, ino, print) = match items.as_slice() {
        [Value::Int(dev), Value::Int(ino)] => (dev, ino, None),
        [Value::Int(dev), Value::Int(ino), Value::Int(print)] => (dev, ino, Some(*print as u64)),
        _ => return Err(bad()),
    };
    let id = follow::FileId {
        dev: *dev as u64,
        ino: *ino as u64,
    };
    Ok(Some(follow::Ident { id, print }))
}

fn restore_header(spout: &mut LineSpout, header: &Value) -> Result<(), String> {
    let Some(parsing) = spout.parsing.as_mut() else {
        return Err("the position has a header, but this spout reads no `format`".into());
    };
    let Value::List(names) = header else {
        return Err("the position's header is not a list".into());
    };
    let names: Option<Vec<String>> = names.iter().map(|n| n.as_str().map(String::from)).collect();
    let names = names.ok_or("the position's header has a name that is not a string")?;
    parsing.parser.restore_header(names)
}

/// The lines a position kept, as this spout keeps them.
fn kept_lines(spout: &LineSpout, kept: Option<&Value>) -> Result<Vec<KeptLine>, String> {
    let items = match kept {
        None => return Ok(Vec::new()),
        Some(Value::List(items)) => items,
        Some(_) => return Err("the position's kept lines are not a list".into()),
    };
    // With the file fields, kept lines are kept with their values too.
    let parsed = spout.parsing.is_some() || spout.placement.is_some();
    items
        .iter()
        .map(|item| match (item, parsed) {
            (Value::Str(s), false) => Ok(KeptLine::Own(s.clone())),
            (Value::List(values), true) => Ok(KeptLine::Parsed(values.iter().cloned().collect())),
            _ if parsed => Err("a kept line is not a list of values (this spout has `format`)"),
            _ => Err("a kept line is not a string (this spout has no `format`)"),
        })
        .collect::<Result<_, _>>()
        .map_err(String::from)
}

#[cfg(test)]
mod tests {
    use super::super::{skip, Input, LineSpout, CHUNK_LINES};
    use crate::components::{Spout, SpoutCollector, SpoutStatus};
    use crate::tuple::{Value, Values};
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// What a spout emitted: each tuple's values and message id.
    #[derive(Default)]
    struct Emitted(Vec<(Values, Option<Value>)>);

    impl SpoutCollector for Emitted {
        fn emit(
            &mut self,
            _: crate::model::plan::StreamId,
            values: Values,
            msg_id: Option<Value>,
        ) -> Vec<u32> {
            self.0.push((values, msg_id));
            Vec::new()
        }
        fn emit_direct(
            &mut self,
            _: u32,
            _: crate::model::plan::StreamId,
            _: Values,
            _: Option<Value>,
        ) {
        }
        fn report_error(&mut self, _: &str) {}
    }

    impl Emitted {
        fn lines(&self) -> Vec<String> {
            let text = |v: &Values| v.first().and_then(Value::as_str).unwrap_or("?").to_string();
            self.0.iter().map(|(v, _)| text(v)).collect()
        }
    }

    /// The oracle: `bytes` split at `\n`, a `\r` before it cut, invalid UTF-8 replaced.
    fn oracle_lines(bytes: &[u8]) -> Vec<String> {
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let trim = |l: &[u8]| l.strip_suffix(b"\r").unwrap_or(l).to_vec();
        let text = |l: &[u8]| String::from_utf8_lossy(&trim(l)).into_owned();
        lines.into_iter().map(text).collect()
    }

    fn file_spout(path: &Path) -> LineSpout {
        let mut spout = LineSpout::new(Input::File(path.to_path_buf()), None);
        spout.tracked = true;
        spout.component = "lines".into();
        spout
    }

    /// Call `next_tuple` until `n` tuples were emitted in all, or the input is exhausted.
    fn run(spout: &mut LineSpout, out: &mut Emitted, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while out.0.len() < n {
            match spout.next_tuple(out) {
                Ok(SpoutStatus::Exhausted) => return,
                Ok(SpoutStatus::Idle) => std::thread::sleep(Duration::from_millis(1)),
                Ok(SpoutStatus::Busy) => {}
                Err(e) => panic!("{e:#}"),
            }
            assert!(Instant::now() < deadline, "the spout is stuck");
        }
    }

    /// 2,500 lines (over two chunk boundaries) of varied lengths, some ending in `\r\n`, some
    /// with invalid UTF-8, the last without a newline.
    fn input() -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..2500 {
            bytes.extend_from_slice(format!("line {i} {}", "x".repeat(i % 37)).as_bytes());
            if i % 11 == 0 {
                bytes.extend_from_slice(b" bad \xff\xfe");
            }
            match (i % 5, i) {
                (_, 2499) => {}
                (0, _) => bytes.extend_from_slice(b"\r\n"),
                _ => bytes.push(b'\n'),
            }
        }
        bytes
    }

    #[test]
    fn a_file_spout_resumes_after_its_position_with_kept_lines_first() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("in.txt");
        let bytes = input();
        std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
        let all = oracle_lines(&bytes);
        assert_eq!(all.len(), 2500);
        for cut in [
            0,
            1,
            CHUNK_LINES - 1,
            CHUNK_LINES,
            CHUNK_LINES + 1,
            2000,
            2500,
        ] {
            let mut first = file_spout(&path);
            let mut out = Emitted::default();
            run(&mut first, &mut out, cut);
            assert_eq!(out.lines(), all[..cut], "cut {cut}: the first run's lines");
            // Ack all but a few; one of those failed (waiting for its replay).
            let unacked: Vec<usize> = [3, 700, CHUNK_LINES, cut.saturating_sub(1)]
                .into_iter()
                .filter(|&i| i < cut)
                .collect();
            for (i, (_, id)) in out.0.iter().enumerate() {
                let id = id.clone().unwrap_or(Value::Null);
                let r = match (unacked.contains(&i), i == 700) {
                    (false, _) => first.ack(id, &mut Emitted::default()),
                    (true, true) => first.fail(id, &mut Emitted::default()),
                    (true, false) => Ok(()),
                };
                r.unwrap_or_else(|e| panic!("{e:#}"));
            }
            let position = first.position().unwrap_or(Value::Null);
            let mut second = file_spout(&path);
            second.restore(position).unwrap_or_else(|e| panic!("{e:#}"));
            let mut resumed = Emitted::default();
            run(&mut second, &mut resumed, usize::MAX);
            let mut expected: Vec<String> = unacked.iter().map(|&i| all[i].clone()).collect();
            expected.dedup();
            expected.extend_from_slice(&all[cut..]);
            assert_eq!(
                resumed.lines(),
                expected,
                "cut {cut}: kept lines, then the rest"
            );
            assert!(
                resumed.0.iter().all(|(_, id)| id.is_some()),
                "tracked again"
            );
        }
    }

    #[test]
    fn a_position_of_another_input_or_past_the_end_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("in.txt");
        std::fs::write(&path, b"one\ntwo\n").unwrap_or_else(|e| panic!("{e}"));
        let stdin = LineSpout::new(Input::Stdin, None).position();
        let err = |p: Option<Value>| {
            let r = file_spout(&path).restore(p.unwrap_or(Value::Null));
            r.err().map(|e| format!("{e:#}")).unwrap_or_default()
        };
        assert!(err(stdin).contains("the position is of a `stdin` spout, this one reads file"));
        let mut spout = file_spout(&path);
        spout.offset = 9;
        let far = err(spout.position());
        assert!(far.contains("offset 9 is past the end of"), "{far}");
        assert!(far.contains("in.txt (8 bytes)"), "{far}");
        assert!(err(Some(Value::Int(3))).contains("not a map"));
    }

    #[test]
    fn stdin_skips_the_bytes_a_position_read() {
        let mut input: &[u8] = b"one\ntwo\n";
        assert_eq!(skip(&mut input, 4), Ok(()));
        assert_eq!(input, b"two\n");
        let mut short: &[u8] = b"one\n";
        let err = skip(&mut short, 9).err().unwrap_or_default();
        assert!(err.contains("stdin ended at byte 4, before the restored position's offset 9"));
    }

    /// A CSV spout with a header: the resumed spout starts after the header (the position
    /// names its columns) and, with a record over two lines under way, from that record.
    #[test]
    fn a_csv_spout_resumes_after_its_header_and_from_a_record_under_way() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("in.csv");
        let text = "name,n\na,1\n\"b\nb\",2\nc,3\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let args = serde_json::json!({"format": "csv", "header": true, "fields": ["name", "n"], "types": {"n": "int"}});
        let spec = crate::components::parse::spec::Spec::from_args(
            args.as_object().unwrap_or(&serde_json::Map::new()),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let csv_spout = || {
            file_spout(&path)
                .parsing(&spec)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let record = |name: &str, n: i64| vec![Value::str(name), Value::Int(n)];
        let mut first = csv_spout();
        let mut out = Emitted::default();
        run(&mut first, &mut out, 1);
        assert_eq!(first.offset, 11, "after the header and `a,1`");
        // Feed the next line, `"b`: a record under way, not yet a tuple.
        assert!(first.emit_next(&mut out).unwrap_or(false));
        assert!(first.parsing.as_ref().is_some_and(|p| p.parser.pending()));
        assert_eq!(
            first.offset, 11,
            "a record under way is resumed from its start"
        );
        assert_eq!(out.0.len(), 1);
        let id = out.0[0].1.clone().unwrap_or(Value::Null);
        first.ack(id, &mut out).unwrap_or_else(|e| panic!("{e:#}"));
        let position = first.position().unwrap_or(Value::Null);
        let header = Value::List(Box::new(vec![Value::str("name"), Value::str("n")]));
        assert!(matches!(&position, Value::Map(m) if m.get("header") == Some(&header)));
        assert!(matches!(&position, Value::Map(m) if m.get("offset") == Some(&Value::Int(11))));
        let mut second = csv_spout();
        second.restore(position).unwrap_or_else(|e| panic!("{e:#}"));
        let mut resumed = Emitted::default();
        run(&mut second, &mut resumed, usize::MAX);
        let got: Vec<Vec<Value>> = resumed.0.iter().map(|(v, _)| v.to_vec()).collect();
        assert_eq!(got, vec![record("b\nb", 2), record("c", 3)]);
    }

    /// A pretty-printed JSON array: the position moves between its elements, and a resumed
    /// spout goes on inside the array (no element twice, none lost, the closing `]` no error).
    #[test]
    fn a_json_array_spout_resumes_between_its_elements() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("in.json");
        let text = "[\n  {\"n\": 1},\n  {\n    \"n\": 2\n  },\n  {\"n\": 3}\n]\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let args = serde_json::json!({"format": "json", "fields": ["n"]});
        let spec = crate::components::parse::spec::Spec::from_args(
            args.as_object().unwrap_or(&serde_json::Map::new()),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let json_spout = || {
            file_spout(&path)
                .parsing(&spec)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let mut first = json_spout();
        let mut out = Emitted::default();
        run(&mut first, &mut out, 1);
        assert_eq!(first.offset, 14, "after `  {{\"n\": 1}},`");
        let id = out.0[0].1.clone().unwrap_or(Value::Null);
        first.ack(id, &mut out).unwrap_or_else(|e| panic!("{e:#}"));
        let position = first.position().unwrap_or(Value::Null);
        assert!(
            matches!(&position, Value::Map(m) if m.get("json") == Some(&Value::str("array"))),
            "{position:?}"
        );
        let mut second = json_spout();
        second.restore(position).unwrap_or_else(|e| panic!("{e:#}"));
        let mut resumed = Emitted::default();
        run(&mut second, &mut resumed, usize::MAX);
        let got: Vec<Vec<Value>> = resumed.0.iter().map(|(v, _)| v.to_vec()).collect();
        assert_eq!(got, vec![vec![Value::Int(2)], vec![Value::Int(3)]]);
    }
}
