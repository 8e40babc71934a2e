//! The `stateful` key of a component: whether it keeps checkpointed state, resolved from the
//! key as written or, when absent, from `topology.stateful` for the built-ins that keep state.

use super::Validator;
use crate::topology::model::ComponentType;
use crate::topology::raw::{RawComponent, RawValue};

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
