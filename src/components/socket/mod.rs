//! The `socket` spout: records over TCP or UDP, newline-delimited or octet-counted (RFC
//! 6587), read by `stdin`'s record readers or as syslog (RFC 3164 and RFC 5424). Validation
//! asks [`check`].

pub(crate) mod builtin;
mod decode;
pub(crate) mod framing;
mod server;
mod settings;
mod spout;
mod syslog;

use spout::{output_fields, SocketSpout};

use serde_json::Value as Json;

type Args = serde_json::Map<String, Json>;

/// The arguments the `socket` spout reads (besides the record arguments of `stdin`).
const ARGS: &[&str] = &[
    "listen",
    "protocol",
    "framing",
    "max_connections",
    "max_frame",
    "idle",
    "max_retries",
];

/// The formats `socket` reads: `stdin`'s and `syslog`.
fn formats() -> &'static [&'static str] {
    static ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut f = crate::components::parse::spec::FORMATS.to_vec();
        f.push("syslog");
        f
    })
}

/// Every problem with a spout's arguments, each with the argument it is about.
fn check(args: &Args, tasks: u32) -> Vec<(&'static str, String)> {
    let (mut problems, args, read) =
        crate::components::http::settings::all_problems(args, settings::Settings::from_args);
    let Some(s) = read else {
        return problems;
    };
    let args = &args;
    let syslog = s.syslog;
    if !syslog {
        problems.extend(crate::components::http::record::check_reader(
            args,
            &decode::is_source_field,
        ));
    }
    if syslog {
        for arg in [
            "header",
            "columns",
            "pattern",
            "types",
            "separator",
            "pair_separator",
        ] {
            if args.contains_key(arg) {
                problems.push((arg, format!("`{arg}` is not read with `format: syslog`")));
            }
        }
    }
    if problems
        .iter()
        .all(|p| !matches!(p.0, "format" | "fields" | "columns"))
    {
        if let Err(why) = SocketSpout::new(args) {
            problems.push(("fields", why));
        }
    }
    if args
        .get("max_retries")
        .is_some_and(|v| v.as_u64().is_none())
    {
        problems.push(("max_retries", "`max_retries` must be a whole number".into()));
    }
    if tasks > 1 && s.protocol == settings::Protocol::Udp {
        problems.push((
            "protocol",
            format!("a udp socket is read by one task: it cannot have {tasks} tasks (give the work after it more tasks)"),
        ));
    } else if tasks > 1 && crate::components::http::settings::any_port(&s.listen) {
        problems.push((
            "listen",
            format!("port 0 with {tasks} tasks: each task would listen on a port of its own; give a port (the tasks share it)"),
        ));
    }
    if s.protocol == settings::Protocol::Udp && args.contains_key("max_connections") {
        problems.push((
            "max_connections",
            "`max_connections` bounds tcp connections; udp has none".into(),
        ));
    }
    problems
}
