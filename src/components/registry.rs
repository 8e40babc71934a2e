//! Every built-in component type, in the order `storm run --help` lists them. Adding a
//! built-in is its own module (which implements [`super::builtin::Builtin`]) and one line here.

use super::builtin::Builtin;
use super::*;
use ComponentType as T;

pub const ALL: &[T] = &[
    T::new(&lines::builtin::StdinType),
    T::new(&lines::builtin::FileType),
    T::new(&generate::GenerateType),
    T::new(&split::SplitType),
    T::new(&count::CountType),
    T::new(&aggregate::builtin::AggregateType),
    T::new(&aggregate::builtin::TopType),
    T::new(&join::builtin::JoinType),
    T::new(&dedupe::DedupeType),
    T::new(&lookup::LookupType),
    T::new(&filter::FilterType),
    T::new(&parse::builtin::ParseType),
    T::new(&map::MapType),
    T::new(&stdout::StdoutType),
    T::new(&log::LogType),
    T::new(&discard::DiscardType),
    T::new(&chaos::ChaosType),
    T::new(&shell::builtin::ShellType),
    T::new(&test_words::TestWordSpoutType),
    T::new(&test_words::TestWordCounterType),
    T::new(&kafka::builtin::KafkaType),
    T::new(&jdbc::builtin::JdbcType),
    T::new(&jdbc::builtin::JdbcLookupType),
    T::new(&HTTP),
    T::new(&socket::builtin::SocketType),
    T::new(&redis::builtin::RedisType),
];

/// `http`: the spout (`http/`) and the sink (`http_sink/`) under one name; its place decides.
static HTTP: super::builtin::by_role::ByRole = super::builtin::by_role::ByRole {
    summary: "spout: records POSTed to an HTTP endpoint (`listen`, `path`); bolt: sends records in batches to `url`",
    spout: &http::builtin::HttpType,
    bolt: &http_sink::builtin::HttpType,
};

/// A built-in component type: a handle on its descriptor, compared by name.
#[derive(Clone, Copy)]
pub struct ComponentType(&'static dyn Builtin);

impl ComponentType {
    /// Every built-in (the registry).
    pub const ALL: &'static [ComponentType] = ALL;

    pub const fn new(b: &'static dyn Builtin) -> ComponentType {
        ComponentType(b)
    }

    pub fn from_name(name: &str) -> Option<ComponentType> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The type a Flux `className` stands for.
    pub fn from_class(class: &str) -> Option<ComponentType> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.classes().contains(&class))
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn summary(self) -> &'static str {
        self.0.summary()
    }

    pub fn is_flux_only(self) -> bool {
        self.0.flux_only()
    }

    pub fn is_console(self) -> bool {
        self.0.is_console()
    }

    pub fn keeps_state(self) -> bool {
        self.0.keeps_state()
    }

    pub fn rewinds(self) -> bool {
        self.0.rewinds()
    }

    /// Whether this type can be a spout, a bolt, or both.
    pub fn can_be(self, kind: super::builtin::ComponentKind) -> bool {
        self.0.can_be(kind)
    }

    /// The names of the spout types that rewind, for messages.
    pub fn rewinding_names() -> Vec<&'static str> {
        Self::names_where(|t| t.rewinds())
    }

    /// The names of the types that keep state, for messages.
    pub fn stateful_names() -> Vec<&'static str> {
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
        self.0.args().iter().map(|a| a.name).collect()
    }
}

impl std::ops::Deref for ComponentType {
    type Target = dyn Builtin;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl std::fmt::Debug for ComponentType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name())
    }
}

impl PartialEq for ComponentType {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for ComponentType {}

impl std::hash::Hash for ComponentType {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
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
