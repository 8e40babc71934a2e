//! A bound on event-time `lag`: a window stays open `lag` after its end, so a long lag holds
//! every key of every window within it in memory. Warned at validate, with what it implies.

use crate::components::builtin::Written;
use crate::syntax::diag::Diagnostic;

/// A lag longer than this is warned about (a day).
const MAX_LAG_MS: i64 = 24 * 60 * 60 * 1000;

/// A lag that keeps more windows than this open at once (per key) is warned about.
const MAX_OPEN_WINDOWS: i64 = 1000;

/// `lag` of an `aggregate`, `top` or `join` beyond a day, or beyond many windows' worth:
/// a located warning saying how many windows of every key it holds at once.
pub(crate) fn lag_bound(w: &mut Written) {
    let Some(args) = w.rc.args.as_ref() else {
        return;
    };
    let Some(lag_at) = args.value.get("lag") else {
        return;
    };
    let serde_json::Value::Object(json) = args.value.to_json() else {
        return;
    };
    let Ok((Some(window), _, lag)) = super::window::window_args(&json) else {
        return;
    };
    if window.measure != super::window::Measure::Millis {
        return;
    }
    let step = window.every.max(1);
    let open = (lag / step).saturating_add(window.size / step);
    if lag <= MAX_LAG_MS && open <= MAX_OPEN_WINDOWS {
        return;
    }
    let text = lag_at.value.as_str().unwrap_or("it").to_string();
    let mut d = Diagnostic::warning(
        format!(
            "`lag` of {text} keeps each window open that long after it ends: up to {open} \
             windows of every key are held in memory at once"
        ),
        lag_at.span,
    );
    d.help = Some(format!(
        "a lag of at most a day and {MAX_OPEN_WINDOWS} windows keeps memory bounded; \
         tuples later than the lag go to the `late` stream"
    ));
    w.diags.push(d);
}
