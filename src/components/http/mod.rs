//! The `http` spout (an HTTP/1.1 endpoint that services POST records to) and what it shares
//! with the `socket` spout: reading records received over the network with `stdin`'s readers
//! (`record`), and the address and size arguments (`settings`). Validation asks [`check`].

pub(crate) mod builtin;
mod handler;
mod inbox;
mod once;
pub(crate) mod record;
pub(crate) mod settings;
mod spout;

use handler::is_source_field;
use spout::{output_fields, HttpSpout};

use serde_json::Value as Json;

type Args = serde_json::Map<String, Json>;

/// The arguments the `http` spout reads (besides the record arguments of `stdin`).
const ARGS: &[&str] = &[
    "listen",
    "path",
    "health_path",
    "token",
    "max_body",
    "max_connections",
    "ack",
    "queue",
    "max_retries",
    "idempotency_header",
    "idempotency_ttl",
];

/// Every problem with a spout's arguments, each with the argument it is about: what
/// `storm validate` reports, located there. `tasks`: how many tasks the spout runs as.
fn check(args: &Args, tasks: u32) -> Vec<(&'static str, String)> {
    let (mut problems, args, read) = settings::all_problems(args, settings::Settings::from_args);
    let Some(settings) = read else {
        return problems;
    };
    let reader = record::check_reader(&args, &is_source_field);
    let reader_ok = reader.is_empty();
    problems.extend(reader);
    if reader_ok {
        if let Err(why) = HttpSpout::new(&args) {
            problems.push(("fields", why));
        }
    }
    if args
        .get("max_retries")
        .is_some_and(|v| v.as_u64().is_none())
    {
        problems.push(("max_retries", "`max_retries` must be a whole number".into()));
    }
    if tasks > 1 && settings::any_port(&settings.listen) {
        problems.push((
            "listen",
            format!(
                "port 0 with {tasks} tasks: each task would listen on a port of its own; give a port (the tasks share it)"
            ),
        ));
    }
    problems
}
