//! One type name, two built-ins: a spout and a bolt written apart (the `http` spout and the
//! `http` sink) made one registry entry whose place decides, as `kafka`'s does. Arguments are
//! the union of both (a name both read with different shapes is left to each role's own
//! check); an argument of the other role only is an error naming the role it belongs to.

use super::{Arg, ArgShape, Builtin, Fields, Input, Roles, TypeCx, Written};
use crate::components::{Bolt, CheckpointParticipant, Spout};
use crate::expr::Type;
use crate::model::{Component, ComponentKind};
use crate::syntax::raw::{RawComponent, RawValue, Span};
use std::path::Path;

/// A spout built-in and a bolt built-in under one name.
pub(crate) struct ByRole {
    pub(crate) summary: &'static str,
    pub(crate) spout: &'static dyn Builtin,
    pub(crate) bolt: &'static dyn Builtin,
}

impl ByRole {
    fn of(&self, kind: ComponentKind) -> &'static dyn Builtin {
        match kind {
            ComponentKind::Spout => self.spout,
            ComponentKind::Bolt => self.bolt,
        }
    }

    fn of_component(&self, c: &Component) -> &'static dyn Builtin {
        self.of(c.kind)
    }

    /// Arguments the other role reads and this one does not: an error each.
    fn other_roles_args(&self, w: &mut Written) {
        let (mine, theirs, role, other) = match w.kind {
            ComponentKind::Spout => (self.spout.args(), self.bolt.args(), "spout", "sink"),
            ComponentKind::Bolt => (self.bolt.args(), self.spout.args(), "sink", "spout"),
        };
        let Some(RawValue::Map(entries)) = w.rc.args.as_ref().map(|a| &a.value) else {
            return;
        };
        let name = self.spout.name();
        for (k, _) in entries {
            let key = k.value.as_str();
            let only_theirs =
                theirs.iter().any(|a| a.name == key) && !mine.iter().any(|a| a.name == key);
            if only_theirs {
                w.error(
                    format!("`{key}` is an argument of an {name} {other}; this one is a {role}"),
                    k.span,
                );
            }
        }
    }
}

impl Builtin for ByRole {
    fn name(&self) -> &'static str {
        self.spout.name()
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn roles(&self) -> Roles {
        Roles::Both
    }
    fn args(&self) -> Vec<Arg> {
        let mut all = self.spout.args();
        for a in self.bolt.args() {
            match all.iter_mut().find(|x| x.name == a.name) {
                Some(x) if x.shape != a.shape => x.shape = ArgShape::Any,
                Some(_) => {}
                None => all.push(a),
            }
        }
        all
    }
    fn args_as(&self, kind: ComponentKind) -> Vec<Arg> {
        self.of(kind).args()
    }
    fn positional(&self) -> Option<super::Positional> {
        self.bolt.positional()
    }
    fn default_grouping(&self) -> Option<super::DefaultGrouping> {
        self.bolt.default_grouping()
    }
    fn field_args(&self) -> &'static [&'static str] {
        self.bolt.field_args()
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        self.bolt.named_input_fields(rc)
    }
    fn keeps_state(&self) -> bool {
        self.spout.keeps_state() || self.bolt.keeps_state()
    }
    fn rewinds(&self) -> bool {
        self.spout.rewinds()
    }
    fn rewinds_with(&self, args: &serde_json::Map<String, serde_json::Value>) -> bool {
        self.spout.rewinds_with(args)
    }
    fn rewinds_when(&self) -> Option<&'static str> {
        self.spout.rewinds_when()
    }
    fn writes(&self, kind: ComponentKind) -> bool {
        self.of(kind).writes(kind)
    }
    fn output_fields(&self, c: &Component, input: Option<&[String]>) -> Fields {
        self.of_component(c).output_fields(c, input)
    }
    fn extra_streams(&self, c: &Component, input: Option<&[String]>) -> Vec<(String, Vec<String>)> {
        self.of_component(c).extra_streams(c, input)
    }
    fn field_types(&self, cx: &TypeCx) -> Option<Vec<Type>> {
        self.of_component(cx.c).field_types(cx)
    }
    fn check(&self, w: &mut Written) {
        self.other_roles_args(w);
        self.of(w.kind).check(w)
    }
    fn check_input(&self, w: &mut Written, c: &Component, input: &Input) {
        self.of(w.kind).check_input(w, c, input)
    }
    fn check_placed(&self, w: &mut Written, c: &Component, taken: &dyn Fn(&str) -> bool) {
        self.of(w.kind).check_placed(w, c, taken)
    }
    fn spout(&self, c: &Component, task: u32, base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        self.spout.spout(c, task, base)
    }
    fn bolt(&self, c: &Component, base: &Path) -> anyhow::Result<Box<dyn Bolt>> {
        self.bolt.bolt(c, base)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        base: &Path,
    ) -> Option<anyhow::Result<Box<dyn CheckpointParticipant>>> {
        self.bolt.checkpointed_bolt(c, base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::builtin::arg;

    struct S;
    struct B;
    impl Builtin for S {
        fn name(&self) -> &'static str {
            "x"
        }
        fn summary(&self) -> &'static str {
            "spout"
        }
        fn roles(&self) -> Roles {
            Roles::Spout
        }
        fn args(&self) -> Vec<Arg> {
            vec![
                arg("listen", ArgShape::Text),
                arg("format", ArgShape::OneOf(&["a"])),
            ]
        }
    }
    impl Builtin for B {
        fn name(&self) -> &'static str {
            "x"
        }
        fn summary(&self) -> &'static str {
            "bolt"
        }
        fn roles(&self) -> Roles {
            Roles::Bolt
        }
        fn args(&self) -> Vec<Arg> {
            vec![
                arg("url", ArgShape::Text),
                arg("format", ArgShape::OneOf(&["b"])),
            ]
        }
        fn writes(&self, _kind: ComponentKind) -> bool {
            true
        }
    }

    #[test]
    fn arguments_are_the_union_and_roles_answer_for_their_place() {
        let both = ByRole {
            summary: "either",
            spout: &S,
            bolt: &B,
        };
        let args = both.args();
        let shape = |n: &str| args.iter().find(|a| a.name == n).map(|a| a.shape);
        assert_eq!(shape("listen"), Some(ArgShape::Text));
        assert_eq!(shape("url"), Some(ArgShape::Text));
        assert_eq!(shape("format"), Some(ArgShape::Any));
        assert!(both.can_be(ComponentKind::Spout) && both.can_be(ComponentKind::Bolt));
        assert!(both.writes(ComponentKind::Bolt) && !both.writes(ComponentKind::Spout));
    }
}
