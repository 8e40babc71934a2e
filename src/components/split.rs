//! The `split` bolt: splits one string field (`args.field`, default the first) on whitespace, or
//! on `args.separator`, emitting one `word` tuple per non-empty piece, anchored to its input.

use super::{Bolt, BoltCollector, TaskContext, Tuple};
use crate::topology::plan::streams;
use crate::tuple::Value;
use compact_str::CompactString;

#[derive(Default)]
pub struct Split {
    field: Option<String>,
    index: usize,
    separator: Option<String>,
}

impl Split {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> Split {
        Split {
            field: args.get("field").and_then(|v| v.as_str()).map(String::from),
            index: 0,
            separator: args
                .get("separator")
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(String::from),
        }
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
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let Some(Value::Str(text)) = input.values.get(self.index) else {
            return Ok(());
        };
        match &self.separator {
            None => {
                for w in text.split_whitespace() {
                    out.send(
                        streams::DEFAULT,
                        &[input],
                        smallvec::smallvec![Value::Str(CompactString::new(w))],
                    );
                }
            }
            Some(sep) => {
                for w in text.split(sep.as_str()).filter(|w| !w.is_empty()) {
                    out.send(
                        streams::DEFAULT,
                        &[input],
                        smallvec::smallvec![Value::Str(CompactString::new(w))],
                    );
                }
            }
        }
        Ok(())
    }
}
