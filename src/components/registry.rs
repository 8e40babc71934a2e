//! Every built-in component type, in the order `storm run --help` lists them. Adding a
//! built-in is its own module (which implements [`super::builtin::Builtin`]) and one line here.

use super::builtin::Builtin;
use super::*;
pub(crate) use crate::model::ComponentType;

/// Every built-in's descriptor; a [`ComponentType`] is an index into it.
const BUILTINS: &[&dyn Builtin] = &[
    &stdin_file::builtin::StdinType,
    &stdin_file::builtin::FileType,
    &generate::GenerateType,
    &split::SplitType,
    &count::CountType,
    &aggregate::builtin::AggregateType,
    &aggregate::builtin::TopType,
    &join::builtin::JoinType,
    &dedupe::DedupeType,
    &lookup::LookupType,
    &filter::FilterType,
    &parse::builtin::ParseType,
    &map::MapType,
    &stdout::StdoutType,
    &log::LogType,
    &discard::DiscardType,
    &chaos::ChaosType,
    &shell::builtin::ShellType,
    &test_words::TestWordSpoutType,
    &test_words::TestWordCounterType,
    &kafka::builtin::KafkaType,
    &jdbc::builtin::JdbcType,
    &jdbc::builtin::JdbcLookupType,
    &HTTP,
    &socket::builtin::SocketType,
    &redis::builtin::RedisType,
];

/// `http`: the spout (`http/`) and the sink (`http_sink/`) under one name; its place decides.
static HTTP: super::builtin::by_role::ByRole = super::builtin::by_role::ByRole {
    summary: "spout: records POSTed to an HTTP endpoint (`listen`, `path`); bolt: sends records in batches to `url`",
    spout: &http::builtin::HttpType,
    bolt: &http_sink::builtin::HttpType,
};

/// One handle per descriptor, in the registry's order.
const ALL: &[ComponentType] = &handles::<{ BUILTINS.len() }>();

const fn handles<const N: usize>() -> [ComponentType; N] {
    let mut all = [ComponentType(0); N];
    let mut i = 0;
    while i < N {
        all[i] = ComponentType(i as u16);
        i += 1;
    }
    all
}

impl ComponentType {
    /// Every built-in (the registry).
    pub const ALL: &'static [ComponentType] = ALL;

    fn descriptor(self) -> &'static dyn Builtin {
        BUILTINS[usize::from(self.0)]
    }

    pub fn from_name(name: &str) -> Option<ComponentType> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The type a Flux `className` stands for.
    pub(crate) fn from_class(class: &str) -> Option<ComponentType> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.classes().contains(&class))
    }

    fn name(self) -> &'static str {
        self.descriptor().name()
    }

    pub fn is_flux_only(self) -> bool {
        self.descriptor().flux_only()
    }

    pub(crate) fn keeps_state(self) -> bool {
        self.descriptor().keeps_state()
    }

    /// See `Builtin::reads_fields_apart`.
    pub(crate) fn reads_fields_apart(self, c: &crate::model::Component) -> bool {
        self.descriptor().reads_fields_apart(c)
    }

    fn rewinds(self) -> bool {
        self.descriptor().rewinds()
    }

    /// Whether this type can be a spout, a bolt, or both.
    pub(crate) fn can_be(self, kind: super::builtin::ComponentKind) -> bool {
        self.descriptor().can_be(kind)
    }

    /// The names of the spout types that rewind, for messages.
    pub(crate) fn rewinding_names() -> Vec<&'static str> {
        Self::names_where(|t| t.rewinds())
    }

    /// The spout types that rewind only with some arguments, with those arguments (the part of
    /// `Builtin::rewinds_when` before any parenthesis), for messages.
    pub(crate) fn sometimes_rewinding() -> Vec<(&'static str, &'static str)> {
        Self::ALL
            .iter()
            .filter_map(|t| {
                let when = t.descriptor().rewinds_when()?;
                Some((t.name(), when.split(" (").next().unwrap_or(when)))
            })
            .collect()
    }

    /// The names of the types that keep state, for messages.
    pub(crate) fn stateful_names() -> Vec<&'static str> {
        Self::names_where(|t| t.keeps_state())
    }

    fn names_where(keep: impl Fn(ComponentType) -> bool) -> Vec<&'static str> {
        Self::ALL
            .iter()
            .copied()
            .filter(|t| keep(*t))
            .map(|t| t.name())
            .collect()
    }

    /// The names of the arguments it reads (for documentation checks and help).
    pub fn argument_names(self) -> Vec<&'static str> {
        self.descriptor().args().iter().map(|a| a.name).collect()
    }
}

impl std::ops::Deref for ComponentType {
    type Target = dyn Builtin;
    fn deref(&self) -> &Self::Target {
        self.descriptor()
    }
}

impl std::fmt::Debug for ComponentType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_classes_map_back() {
        for (i, t) in ComponentType::ALL.iter().enumerate() {
            assert!(ComponentType::ALL[..i].iter().all(|u| u.name() != t.name()));
            for class in t.classes() {
                assert_eq!(ComponentType::from_class(class), Some(*t));
            }
        }
    }
}
