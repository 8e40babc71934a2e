//! The `stateful` key of a component: whether it keeps checkpointed state, resolved from the
//! key as written or, when absent, from `topology.stateful` for the built-ins that keep state;
//! and the spouts a stateful topology can take under `topology.state.guarantee`.

use super::Validator;
use crate::config::Config;
use crate::model::{Component, ComponentKind, ComponentType};
use crate::syntax::raw::{RawComponent, RawValue};

impl Validator<'_> {
    /// `stateful:` as written, else `topology.stateful` for the types that keep state;
    /// `stateful: true` on a type that keeps none is an error naming those that do.
    pub(super) fn stateful_flag(
        &mut self,
        rc: &RawComponent,
        ctype: Option<ComponentType>,
    ) -> bool {
        let keeps = ctype.is_some_and(ComponentType::keeps_state);
        let Some(s) = &rc.stateful else {
            return keeps && self.stateful_default;
        };
        let RawValue::Bool(on) = s.value else {
            self.error("`stateful` must be true or false", s.span);
            return false;
        };
        if let (true, false, Some(t)) = (on, keeps, ctype) {
            let names = ComponentType::stateful_names().join(", ");
            self.error(
                format!("`{}` keeps no state to checkpoint", t.name()),
                s.span,
            )
            .help = Some(format!(
                "`stateful` is for the built-ins that keep state: {names}"
            ));
        }
        on && keeps
    }
}

impl Validator<'_> {
    /// A stateful topology is exactly once unless it says `topology.state.guarantee:
    /// at_least_once`: then every spout must rewind to a checkpoint, and one that cannot is an
    /// error located at its type.
    pub(super) fn rewinding_spouts(
        &mut self,
        components: &[(Component, &RawComponent)],
        config: &Config,
    ) {
        let guarantee = config
            .get("topology.state.guarantee")
            .and_then(|v| v.as_str());
        let stateful = components.iter().any(|(c, _)| c.stateful);
        if !stateful || guarantee == Some("at_least_once") {
            return;
        }
        let mut rewinding = ComponentType::rewinding_names().join(", ");
        for (name, when) in ComponentType::sometimes_rewinding() {
            rewinding += &format!(", {name} {when}");
        }
        for (c, rc) in components {
            if c.kind != ComponentKind::Spout || c.ctype.rewinds_with(&c.args) {
                continue;
            }
            let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
            self.error(
                format!(
                    "spout `{}` (`{}`) cannot rewind to a checkpoint, so the state of this \
                     stateful topology would not be exactly once",
                    c.id,
                    c.ctype.name()
                ),
                at,
            )
            .help = Some(match c.ctype.rewinds_when() {
                Some(when) => format!(
                    "an `{}` spout rewinds {when}; or set `topology.state.guarantee: \
                     at_least_once` to accept that its tuples may reach the state again",
                    c.ctype.name()
                ),
                None => format!(
                    "after a failure its tuples would reach the state again; use a spout that \
                     rewinds ({rewinding}), or set `topology.state.guarantee: at_least_once` \
                     to accept that"
                ),
            });
        }
    }
}
