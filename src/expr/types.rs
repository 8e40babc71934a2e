//! The static types of the expression language: what a value is known to be before any tuple
//! arrives, shared by the checker and the function table.

/// What a value is known to be before any tuple arrives: a field's declared type, or what an
/// expression yields. Any value may also be null at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    Str,
    Int,
    Float,
    Bool,
    Null,
    /// Known only at run time (e.g. the fields of a shell component).
    Any,
}

impl Type {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Type::Str => "a string",
            Type::Int | Type::Float => "a number",
            Type::Bool => "a condition",
            Type::Null => "null",
            Type::Any => "a value",
        }
    }

    /// The short name (`int`, `float`, `str`, `bool`, `null`, `any`).
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Type::Str => "str",
            Type::Int => "int",
            Type::Float => "float",
            Type::Bool => "bool",
            Type::Null => "null",
            Type::Any => "any",
        }
    }

    pub(super) fn is_num(self) -> bool {
        matches!(self, Type::Int | Type::Float)
    }

    /// Integers and floats compare with each other: they are one class.
    pub(super) fn class(self) -> Type {
        if self == Type::Float {
            Type::Int
        } else {
            self
        }
    }

    /// The type of a value that is one of two (`if`, `coalesce`): `Any` when they differ.
    pub(super) fn join(self, other: Type) -> Type {
        match (self, other) {
            (a, b) if a == b => a,
            (Type::Null, b) => b,
            (a, Type::Null) => a,
            (a, b) if a.is_num() && b.is_num() => Type::Float,
            _ => Type::Any,
        }
    }
}
