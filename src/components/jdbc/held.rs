//! What a stateful `jdbc` sink holds until its checkpoint commits (see `components::held`):
//! rows, each the values of the columns in order, written in one transaction with the
//! checkpoint's number in the marker table.

use crate::tuple::{Value, Values};

/// One row: the values of the columns, in order.
pub(crate) type Row = Values;

/// The rows held, per checkpoint.
pub(crate) type Held = crate::components::held::Held<Row>;

impl crate::components::held::Item for Row {
    const UNREADABLE: &'static str = "the saved rows of the sink are not readable";
    fn to_value(&self) -> Value {
        Value::list(self.to_vec())
    }
    fn from_value(v: &Value) -> Option<Row> {
        match v {
            Value::List(values) => Some(values.iter().cloned().collect()),
            _ => None,
        }
    }
}
