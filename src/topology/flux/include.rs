//! Flux `includes`: one level deep; without `override` the including file's values win, and
//! streams are always appended. What an included file defines is located at its include entry.

use super::{is_flux, read_one, substitute, Properties};
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawTopology, RawValue, Span, Spanned};
use crate::topology::yaml::{self, TreeReader};
use std::path::Path;

/// One `includes` entry (Flux: one level; without `override` the including file wins; streams
/// are always appended). Everything read from the included file is located at the entry.
pub(super) fn include(
    r: &mut TreeReader,
    raw: &mut RawTopology,
    inc: &Spanned<RawValue>,
    (root_text, base): (Option<&str>, &Path),
    props: &Properties,
) {
    if matches!(
        inc.value.get("resource").map(|v| &v.value),
        Some(RawValue::Bool(true))
    ) {
        r.diagnostics.push(
            Diagnostic::error("a classpath resource include needs a JVM", inc.span)
                .with_help("use `resource: false` and a `file:` path"),
        );
        return;
    }
    let Some(file) = inc
        .value
        .get("file")
        .and_then(|f| r.string(f, "include `file`"))
    else {
        r.error("an include without `file`", inc.span);
        return;
    };
    let path = base.join(&file.value);
    let text = match crate::topology::read_text_bounded(&path) {
        Ok(t) => t,
        Err(e) => {
            r.error(
                format!("cannot read included file {}: {e}", path.display()),
                file.span,
            );
            return;
        }
    };
    let mut tree = match yaml::parse_tree(&text) {
        Ok(t) => t,
        Err(d) => {
            let (line, col) = d
                .span
                .map_or((1, 1), |s| crate::syntax::diag::line_col(&text, s.start));
            r.error(
                format!("{}:{line}:{col}: {}", path.display(), d.message),
                file.span,
            );
            return;
        }
    };
    if let Some(why) = cycle(root_text, &path, &text, &tree) {
        r.diagnostics.push(
            Diagnostic::error(format!("include cycle: {why}"), file.span)
                .with_help("an included file must not include its includer or itself"),
        );
        return;
    }
    respan(&mut tree, file.span);
    substitute(&mut tree, props, &mut r.diagnostics);
    let included = if is_flux(&tree) {
        read_one(&tree)
    } else {
        yaml::read_topology(&tree)
    };
    let over = matches!(
        inc.value.get("override").map(|v| &v.value),
        Some(RawValue::Bool(true))
    );
    merge(raw, included, over);
}

/// Why including `path` (its `text` parsed into `tree`) from the file whose text is `root_text`
/// (when known) would go round in a circle: it is that file, or one of its own includes is
/// that file or itself. Nested includes are otherwise not followed (one level deep).
fn cycle(
    root_text: Option<&str>,
    path: &Path,
    text: &str,
    tree: &Spanned<RawValue>,
) -> Option<String> {
    if root_text == Some(text) {
        return Some(format!("{} is the including file itself", path.display()));
    }
    let nested = match tree.value.get("includes").map(|v| &v.value) {
        Some(RawValue::List(items)) => items.as_slice(),
        _ => &[],
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let me = std::fs::canonicalize(path).ok();
    for item in nested {
        let Some(name) = item.value.get("file").and_then(|f| f.value.as_str()) else {
            continue;
        };
        let next = dir.join(name);
        let back = root_text
            .is_some_and(|root| crate::topology::read_text_bounded(&next).is_ok_and(|t| t == root));
        let itself = me.is_some() && std::fs::canonicalize(&next).ok() == me;
        if back || itself {
            let target = if back { "the including file" } else { "itself" };
            return Some(format!(
                "{} includes {} ({target})",
                path.display(),
                next.display()
            ));
        }
    }
    None
}

fn merge(raw: &mut RawTopology, inc: RawTopology, over: bool) {
    if raw.name.is_none() || (over && inc.name.is_some()) {
        raw.name = inc.name.or(raw.name.take());
    }
    for (k, v) in inc.config {
        match raw.config.iter().position(|(x, _)| x.value == k.value) {
            Some(i) if over => raw.config[i] = (k, v),
            Some(_) => {}
            None => raw.config.push((k, v)),
        }
    }
    for (mine, theirs) in [(&mut raw.spouts, inc.spouts), (&mut raw.bolts, inc.bolts)] {
        for c in theirs {
            let id = c.id.as_ref().map(|i| i.value.clone());
            match mine
                .iter()
                .position(|m| m.id.as_ref().map(|i| &i.value) == id.as_ref())
            {
                Some(i) if over => mine[i] = c,
                Some(_) => {}
                None => mine.push(c),
            }
        }
    }
    raw.streams.extend(inc.streams);
    raw.diagnostics.extend(inc.diagnostics);
}

fn respan(tree: &mut Spanned<RawValue>, span: Span) {
    tree.span = span;
    match &mut tree.value {
        RawValue::List(items) => items.iter_mut().for_each(|i| respan(i, span)),
        RawValue::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            k.span = span;
            respan(v, span)
        }),
        _ => {}
    }
}
