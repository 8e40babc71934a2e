//! The types `parse` converts fields to (`types: {status: int}`), and the conversion: a text
//! that is not a value of the type is an error for its line, never a silent null or zero.

use crate::tuple::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldType {
    Int,
    Float,
    Str,
    Bool,
}

impl FieldType {
    pub(crate) fn from_name(name: &str) -> Option<FieldType> {
        Some(match name {
            "int" => FieldType::Int,
            "float" => FieldType::Float,
            "str" | "string" => FieldType::Str,
            "bool" => FieldType::Bool,
            _ => return None,
        })
    }

    /// The type in words, with its article.
    fn described(self) -> &'static str {
        match self {
            FieldType::Int => "an integer",
            FieldType::Float => "a number",
            FieldType::Str => "a string",
            FieldType::Bool => "a boolean",
        }
    }

    /// `value` as this type. Null stays null (a missing field); `-` converts to null for
    /// numbers (the access log's "no bytes").
    pub(crate) fn convert(self, value: Value) -> Result<Value, String> {
        let bad = |v: &Value| {
            let mut shown = String::new();
            v.write_plain(&mut shown);
            format!("`{shown}` is not {}", self.described())
        };
        Ok(match (self, value) {
            (_, Value::Null) => Value::Null,
            (FieldType::Str, Value::Str(s)) => Value::Str(s),
            (FieldType::Str, other) => {
                let mut s = String::new();
                other.write_plain(&mut s);
                Value::str(&s)
            }
            (FieldType::Int, Value::Int(i)) => Value::Int(i),
            (FieldType::Int, Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Value::Int(f as i64)
            }
            (FieldType::Int | FieldType::Float, Value::Str(s)) if s.as_str() == "-" => Value::Null,
            (FieldType::Int, Value::Str(s)) => match s.trim().parse::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => return Err(bad(&Value::Str(s))),
            },
            (FieldType::Float, Value::Float(f)) => Value::Float(f),
            (FieldType::Float, Value::Int(i)) => Value::Float(i as f64),
            (FieldType::Float, Value::Str(s)) => match s.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => Value::Float(f),
                _ => return Err(bad(&Value::Str(s))),
            },
            (FieldType::Bool, Value::Bool(b)) => Value::Bool(b),
            (FieldType::Bool, Value::Str(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Value::Bool(true),
                "false" | "0" | "no" => Value::Bool(false),
                _ => return Err(bad(&Value::Str(s))),
            },
            (FieldType::Bool, Value::Int(i)) if i == 0 || i == 1 => Value::Bool(i == 1),
            (_, other) => return Err(bad(&other)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_values_or_say_why_not() {
        assert_eq!(
            FieldType::Int.convert(Value::str(" 42")),
            Ok(Value::Int(42))
        );
        assert_eq!(FieldType::Int.convert(Value::str("-")), Ok(Value::Null));
        assert!(FieldType::Int.convert(Value::str("4x")).is_err());
        assert_eq!(
            FieldType::Float.convert(Value::str("1.5")),
            Ok(Value::Float(1.5))
        );
        assert!(FieldType::Float.convert(Value::str("NaN")).is_err());
        assert_eq!(
            FieldType::Bool.convert(Value::str("TRUE")),
            Ok(Value::Bool(true))
        );
        assert_eq!(FieldType::Str.convert(Value::Int(7)), Ok(Value::str("7")));
        assert_eq!(FieldType::Int.convert(Value::Null), Ok(Value::Null));
        assert_eq!(
            FieldType::Int.convert(Value::str("abc")),
            Err("`abc` is not an integer".to_string())
        );
    }
}
