//! The `split` bolt: splits one string field (`args.field`, default the first) on whitespace, or
//! on `args.separator`, emitting one `word` tuple per non-empty piece, anchored to its input.

use super::builtin as b;
use super::{Bolt, BoltCollector, Folded, ReaderFold, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value};
use compact_str::CompactString;
use std::collections::HashMap;

pub struct Split {
    field: Option<String>,
    index: usize,
    separator: Option<String>,
    /// `index` is known: prepared, or no `field` to look for.
    placed: bool,
}

impl Split {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> Split {
        let field = args.get("field").and_then(|v| v.as_str()).map(String::from);
        Split {
            placed: field.is_none(),
            field,
            index: 0,
            separator: args
                .get("separator")
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(String::from),
        }
    }
}

/// How `for_each_word` sees a byte.
const WORD: u8 = 0;
const SPACE: u8 = 1;
/// The first byte of a character that may be a non-ASCII space: every Unicode space outside
/// ASCII starts with 0xC2, 0xE1, 0xE2 or 0xE3 in UTF-8.
const MAYBE_SPACE: u8 = 2;

static CLASS: [u8; 256] = {
    let mut t = [WORD; 256];
    // char::is_whitespace for ASCII: U+0009..=U+000D and U+0020.
    t[b' ' as usize] = SPACE;
    let mut b = b'\t';
    while b <= b'\r' {
        t[b as usize] = SPACE;
        b += 1;
    }
    t[0xC2] = MAYBE_SPACE;
    t[0xE1] = MAYBE_SPACE;
    t[0xE2] = MAYBE_SPACE;
    t[0xE3] = MAYBE_SPACE;
    t
};

/// The pieces of `text` between whitespace, as `str::split_whitespace` gives them, but twice as
/// fast: one table look-up per byte, and a character is decoded only when its first byte can
/// start a non-ASCII space.
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    // The width of the space at `i`, or 0 when `i` starts a word character.
    let space_at = |i: usize| -> usize {
        match CLASS[bytes[i] as usize] {
            WORD => 0,
            SPACE => 1,
            _ => match text.get(i..).and_then(|rest| rest.chars().next()) {
                Some(c) if c.is_whitespace() => c.len_utf8(),
                _ => 0,
            },
        }
    };
    let mut i = 0;
    while i < n {
        // Skip the spaces before a word.
        let w = space_at(i);
        if w > 0 {
            i += w;
            continue;
        }
        let start = i;
        i += 1;
        // The word runs to the next space.
        while i < n {
            let class = CLASS[bytes[i] as usize];
            if class == WORD || (class == MAYBE_SPACE && space_at(i) == 0) {
                i += 1;
            } else {
                break;
            }
        }
        // `start` and `i` are character boundaries: a space's first byte is never inside a
        // character.
        f(&text[start..i]);
    }
}

/// The words `split` would emit, counted per word for a `count` of them that alone receives
/// them (see `Bolt::counting_fold`): one `__folded` tuple per chunk of lines, `[words, counts]`
/// (two lists, the n-th count that of the n-th word).
struct WordCounts {
    separator: Option<String>,
    index: usize,
    counts: HashMap<CompactString, i64, foldhash::fast::FixedState>,
    words: u64,
    /// A line of the chunk was not read ahead: its words are not here.
    broken: bool,
}

impl WordCounts {
    fn take(&mut self, text: &str) {
        let WordCounts {
            separator,
            counts,
            words,
            ..
        } = self;
        let count = |w: &str| {
            *words += 1;
            match counts.get_mut(w) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(CompactString::from(w), 1);
                }
            }
        };
        match separator {
            None => for_each_word(text, count),
            Some(sep) => text
                .split(sep.as_str())
                .filter(|w| !w.is_empty())
                .for_each(count),
        }
    }
}

impl ReaderFold for WordCounts {
    fn add(&mut self, values: &[Value]) {
        if let Some(Value::Str(text)) = values.get(self.index) {
            self.take(text);
        }
    }

    fn add_text(&mut self, line: &str) {
        if self.index == 0 {
            self.take(line);
        }
    }

    fn abandon(&mut self) {
        self.broken = true;
    }

    fn finish(&mut self) -> Option<Folded> {
        if std::mem::take(&mut self.broken) {
            self.counts.clear();
            self.words = 0;
            return None;
        }
        let (mut words, mut counts) = (Vec::new(), Vec::new());
        for (w, n) in self.counts.drain() {
            words.push(Value::Str(w));
            counts.push(Value::Int(n));
        }
        let executed = std::mem::take(&mut self.words);
        Some(Folded {
            values: smallvec::smallvec![Value::list(words), Value::list(counts)],
            executed,
        })
    }

    fn fresh(&self) -> Box<dyn ReaderFold> {
        Box::new(WordCounts {
            separator: self.separator.clone(),
            index: self.index,
            counts: HashMap::default(),
            words: 0,
            broken: false,
        })
    }
}

impl Bolt for Split {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        if let Some(f) = &self.field {
            self.index = super::input_fields(ctx)
                .iter()
                .position(|x| x == f)
                .unwrap_or(0);
        }
        self.placed = true;
        Ok(())
    }

    /// Once `index` is known (a fold asked for before `prepare` reads the first field).
    fn counting_fold(&self) -> Option<Box<dyn ReaderFold>> {
        if !self.placed {
            return None;
        }
        Some(Box::new(WordCounts {
            separator: self.separator.clone(),
            index: self.index,
            counts: HashMap::default(),
            words: 0,
            broken: false,
        }))
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let Some(Value::Str(text)) = input.values.get(self.index) else {
            return Ok(());
        };
        match &self.separator {
            None => for_each_word(text, |w| out.send_str(streams::DEFAULT, &[input], w)),
            Some(sep) => {
                for w in text.split(sep.as_str()).filter(|w| !w.is_empty()) {
                    out.send_str(streams::DEFAULT, &[input], w);
                }
            }
        }
        Ok(())
    }
}

/// The `split` built-in.
pub(crate) struct SplitType;

impl b::Builtin for SplitType {
    fn name(&self) -> &'static str {
        "split"
    }
    fn summary(&self) -> &'static str {
        "bolt: one `word` per piece of a string `field`, on whitespace or `separator`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![b::arg("field", A::Text), b::arg("separator", A::Text)]
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::One("field"))
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["field"]
    }
    fn output_fields(&self, _c: &crate::model::Component, _input: Option<&[String]>) -> b::Fields {
        b::one_field("word")
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(cx.all(crate::expr::Type::Str))
    }
    fn bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Split::new(&c.args)))
    }
}

#[cfg(test)]
mod tests {
    use super::for_each_word;
    use proptest::prelude::*;

    fn words(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        for_each_word(text, |w| v.push(w.to_string()));
        v
    }

    #[test]
    fn splits_like_split_whitespace() {
        assert_eq!(words("  a\tbb \r\n ccé "), ["a", "bb", "ccé"]);
        assert_eq!(words("x\u{a0}y\u{2003}z"), ["x", "y", "z"]);
        assert!(words(" \t ").is_empty());
    }

    /// What a chunk's fold counts: every word of its lines, as `split` would emit them, or
    /// nothing when a line of the chunk was not given to it.
    #[test]
    fn a_counting_fold_counts_the_words_split_emits() {
        use crate::components::Bolt;
        use crate::tuple::Value;
        let split = super::Split::new(&serde_json::Map::new());
        let mut fold = split.counting_fold().expect("split folds into counts");
        fold.add_text("a bb  a\t");
        fold.add(&[Value::str("bb c")]);
        fold.add(&[Value::Int(3)]);
        let folded = fold.finish().expect("folded");
        assert_eq!(folded.executed, 5);
        let (Value::List(keys), Value::List(counts)) = (&folded.values[0], &folded.values[1])
        else {
            panic!("{folded:?}");
        };
        let mut pairs: Vec<(Value, Value)> =
            keys.iter().cloned().zip(counts.iter().cloned()).collect();
        pairs.sort_by_key(|(k, _)| format!("{k:?}"));
        let int = Value::Int;
        assert_eq!(
            pairs,
            [
                (Value::str("a"), int(2)),
                (Value::str("bb"), int(2)),
                (Value::str("c"), int(1))
            ]
        );
        fold.add_text("x");
        fold.abandon();
        assert_eq!(fold.finish(), None, "a line missing: nothing to hand over");
        assert_eq!(
            fold.finish().map(|f| f.executed),
            Some(0),
            "the next chunk starts afresh"
        );
    }

    proptest! {
        #[test]
        fn agrees_with_split_whitespace(text in "[ a-zé\t\r\n\u{a0}\u{2000}\u{3000}€—]{0,40}") {
            let expected: Vec<String> = text.split_whitespace().map(String::from).collect();
            prop_assert_eq!(words(&text), expected);
        }
    }
}
