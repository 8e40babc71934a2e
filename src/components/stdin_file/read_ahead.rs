//! The values a reader thread read ahead for the lines of one chunk, end to end in one list:
//! reading makes no list per line on the reader thread. The spout makes each line's own list
//! as it emits it, on the thread that frees it once the tuple is handled, so the allocator
//! hands it memory still in that core's cache (lists made on one thread and freed on another
//! were a fifth of the reader's time).

use crate::components::parse::Prefetch;
use crate::tuple::{Value, Values};

#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    values: Vec<Value>,
    /// Per line, the range of its values in `values`, or `None`: the spout's parser reads it.
    /// Empty when nothing is read ahead.
    spans: Vec<Option<(u32, u32)>>,
    /// Per line, when the reader evaluates a filter: whether it rejects the line's values.
    rejected: Vec<bool>,
    /// When the reader runs a bolt's fold: the tuple standing for every line of the chunk,
    /// if the fold could make one (see `Spout::run_fold`).
    folded: Option<crate::components::Folded>,
}

impl ReadAhead {
    /// Room for `lines` lines of `width` values each.
    pub(crate) fn with_capacity(lines: usize, width: usize) -> ReadAhead {
        ReadAhead {
            values: Vec::with_capacity(lines * width),
            spans: Vec::with_capacity(lines),
            rejected: Vec::new(),
            folded: None,
        }
    }

    /// Read the next line with `reader` (`whole`: it is a line of its own, not a piece of a
    /// longer one, which only the spout's parser reads).
    pub(crate) fn read(&mut self, reader: &mut Prefetch, line: &str, whole: bool) {
        let start = self.values.len();
        let span = match whole && reader.read_into(line, &mut self.values) {
            true => u32::try_from(start)
                .ok()
                .zip(u32::try_from(self.values.len()).ok()),
            false => None,
        };
        if span.is_none() {
            self.values.truncate(start);
        }
        if let Some(filter) = reader.filter() {
            let read = self.values.get(start..).filter(|_| span.is_some());
            self.rejected.push(read.is_some_and(|v| !filter.eval(v)));
        }
        if let Some(fold) = reader.fold() {
            match self.values.get(start..).filter(|_| span.is_some()) {
                Some(values) => fold.add(values),
                None => fold.abandon(),
            }
        }
        self.spans.push(span);
    }

    /// The chunk's lines are all read: take what the reader's fold made of them.
    pub(crate) fn finish(&mut self, reader: &mut Prefetch) {
        self.folded = reader.fold().and_then(|f| f.finish());
    }

    /// What a fold of the chunk's plain lines made of them (see `ReaderFold::add_text`).
    pub(crate) fn set_folded(&mut self, folded: Option<crate::components::Folded>) {
        self.folded = folded;
    }

    /// The tuple standing for every line of the chunk, taken, if the reader's fold made one
    /// and no line was taken yet.
    pub(crate) fn take_folded(&mut self) -> Option<crate::components::Folded> {
        self.folded.take()
    }

    /// Whether the reader's filter rejects line `i` (read ahead, and not yet taken).
    pub(crate) fn rejected(&self, i: usize) -> bool {
        self.rejected.get(i).copied().unwrap_or(false)
            && self.spans.get(i).is_some_and(Option::is_some)
    }

    /// How many lines from line `i` on, one after the other, the reader's filter rejects.
    pub(crate) fn rejected_run(&self, i: usize) -> usize {
        (i..self.rejected.len())
            .take_while(|&j| self.rejected(j))
            .count()
    }

    /// The values read ahead for line `i`, taken (`None`: the spout's parser reads it).
    pub(crate) fn take(&mut self, i: usize) -> Option<Values> {
        let (start, end) = self.spans.get_mut(i)?.take()?;
        let read = self.values.get_mut(start as usize..end as usize)?;
        let mut values = Values::with_capacity(read.len());
        for v in read {
            values.push(std::mem::replace(v, Value::Null));
        }
        Some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::parse::spec::Spec;

    #[test]
    fn lines_read_ahead_are_taken_once_and_the_others_left_to_the_parser() {
        let args = serde_json::json!({"format": "json", "fields": ["a", "b"]});
        let spec = Spec::from_args(args.as_object().expect("an object")).expect("a spec");
        let mut parser = crate::components::parse::Parser::new(&spec).expect("a parser");
        let mut reader = parser.read_ahead(&spec).expect("JSON reads ahead");
        let mut ahead = ReadAhead::default();
        ahead.read(&mut reader, r#"{"a": 1, "b": "x"}"#, true);
        ahead.read(&mut reader, r#"{"a": 2, "#, true);
        ahead.read(&mut reader, r#"{"a": 3}"#, false);
        ahead.read(&mut reader, r#"{"b": true, "a": [1]}"#, true);
        ahead.read(&mut reader, r#"{"b": null}"#, true);
        let got: Vec<Option<Values>> = (0..5).map(|i| ahead.take(i)).collect();
        let ints = |a: i64, b: Value| Some(Values::from_vec(vec![Value::Int(a), b]));
        assert_eq!(got[0], ints(1, Value::str("x")));
        assert_eq!(got[1], None, "a truncated object is the parser's");
        assert_eq!(got[2], None, "a piece is the parser's");
        assert_eq!(got[3], None, "a wanted nested value is the parser's");
        assert_eq!(
            got[4],
            Some(Values::from_vec(vec![Value::Null, Value::Null]))
        );
        assert_eq!(ahead.take(0), None, "taken once");
        assert_eq!(ahead.take(9), None);
    }

    #[test]
    fn a_filter_marks_the_lines_it_rejects_and_keeps_their_values() {
        let args = serde_json::json!({"format": "json", "fields": ["a", "b"]});
        let spec = Spec::from_args(args.as_object().expect("an object")).expect("a spec");
        let mut parser = crate::components::parse::Parser::new(&spec).expect("a parser");
        let mut reader = parser.read_ahead(&spec).expect("JSON reads ahead");
        let fields = ["a".to_string(), "b".to_string()];
        let filter = crate::expr::parse("a > 1").and_then(|e| e.compile(&fields));
        reader.set_filter(filter.expect("compiles"));
        let mut ahead = ReadAhead::default();
        for line in [r#"{"a": 1}"#, r#"{"a": 2}"#, r#"{"a": 0, "#, r#"{"b": 5}"#] {
            ahead.read(&mut reader, line, true);
        }
        let rejected: Vec<bool> = (0..5).map(|i| ahead.rejected(i)).collect();
        assert_eq!(rejected, [true, false, false, true, false]);
        let runs: Vec<usize> = (0..5).map(|i| ahead.rejected_run(i)).collect();
        assert_eq!(runs, [1, 0, 0, 1, 0]);
        let values = Values::from_vec(vec![Value::Int(1), Value::Null]);
        assert_eq!(
            ahead.take(0),
            Some(values),
            "a rejected line's values are kept"
        );
        assert!(!ahead.rejected(0), "taken, it is no longer there to skip");
    }
}
