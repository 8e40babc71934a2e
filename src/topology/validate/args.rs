//! Validation of built-in components' arguments: their names and shapes (every built-in's
//! descriptor lists what it reads), the input fields they name, and each type's checks once
//! every component is read.

use super::*;
use crate::components::builtin::Arg;

impl Validator<'_> {
    /// Every argument must be one the component reads, of the right shape: an unknown name
    /// is an error with a did-you-mean, never silently ignored.
    /// A type with two roles suggests from the arguments of the role it is in; an argument
    /// of its other role is left to the type's own check, which names that role.
    pub(super) fn args_shape(
        &mut self,
        rc: &RawComponent,
        ctype: ComponentType,
        kind: ComponentKind,
    ) {
        let Some(args) = &rc.args else { return };
        let RawValue::Map(entries) = &args.value else {
            return; // already reported by the reader
        };
        let known = ctype.args_as(kind);
        let any_role = ctype.args();
        for (k, v) in entries {
            let Some(expect) = known.iter().find(|a| a.name == k.value).map(|a| a.shape) else {
                if any_role.iter().any(|a| a.name == k.value) {
                    continue;
                }
                let d = self.error(
                    format!("`{}` takes no argument `{}`", ctype.name(), k.value),
                    k.span,
                );
                d.help = Some(unknown_arg_help(&k.value, ctype, &known));
                continue;
            };
            if let Some(problem) = expect.problem(&v.value) {
                self.error(format!("`args.{}` {problem}", k.value), v.span);
            }
        }
    }

    /// Arguments that name input fields (`count`'s `fields`, `split`'s `field`) must name
    /// fields the input declares, whatever declared them (a built-in, `fields:` on a shell
    /// component, Flux).
    pub(super) fn field_args(
        &mut self,
        rc: &RawComponent,
        ctype: ComponentType,
        input: &Stream,
        fields: &[String],
    ) {
        for (name, span) in ctype.named_input_fields(rc) {
            let name = name.as_str();
            // Already reported at the same place (the DSL's implied fields grouping).
            let reported = self
                .diags
                .iter()
                .any(|d| d.is_error() && d.span == Some(span));
            if reported || fields.iter().any(|x| x == name) {
                continue;
            }
            let d = self.error(
                format!(
                    "`{}` does not declare field `{name}` on stream `{}`",
                    input.from, input.stream
                ),
                span,
            );
            d.help = Some(match suggest(name, fields.iter().map(String::as_str)) {
                Some(x) => format!("did you mean `{x}`? its fields: {}", fields.join(", ")),
                None => format!("its fields: {}", fields.join(", ")),
            });
        }
    }

    /// Each type's checks once every component is read (`Builtin::check_placed`).
    pub(super) fn placed_checks(&mut self, components: &[(Component, &RawComponent)]) {
        let declared = std::mem::take(&mut self.declared);
        let taken = |id: &str| declared.contains_key(id);
        for (c, rc) in components {
            let mut w = self.written(rc, c.kind, c.parallelism, c.tasks);
            c.ctype.check_placed(&mut w, c, &taken);
        }
        self.declared = declared;
    }
}

/// The names of the arguments a built-in reads (for documentation checks and help).
pub fn argument_names(ctype: ComponentType) -> Vec<&'static str> {
    ctype.argument_names()
}

/// What to say about an argument a component does not read: the closest known name (by
/// spelling, or the one it abbreviates: `sep` → `separator`), and the full list.
fn unknown_arg_help(name: &str, ctype: ComponentType, known: &[Arg]) -> String {
    let names: Vec<&str> = known.iter().map(|a| a.name).collect();
    if names.is_empty() {
        return format!("`{}` takes no arguments", ctype.name());
    }
    let lower = name.to_ascii_lowercase();
    let close = suggest(name, names.iter().copied()).or_else(|| {
        (lower.len() >= 2)
            .then(|| names.iter().copied().find(|n| n.starts_with(&lower)))
            .flatten()
    });
    let list = names.join(", ");
    match close {
        Some(c) => format!("did you mean `{c}`? `{}` takes: {list}", ctype.name()),
        None => format!("`{}` takes: {list}", ctype.name()),
    }
}
