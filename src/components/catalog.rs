//! Builds the component instance for a task from its validated description.

use super::{Bolt, Spout, TaskContext};
use crate::topology::model::{Component, ComponentType};
use std::path::Path;

/// A spout instance for one task.
pub fn spout(c: &Component, task_index: u32, base_dir: &Path) -> anyhow::Result<Box<dyn Spout>> {
    let max_retries = super::replay::max_retries(&c.args);
    Ok(match c.ctype {
        ComponentType::Stdin | ComponentType::File => {
            let input = match c.arg_str("path") {
                // Relative paths are relative to the topology file's folder, as every path in
                // a topology file is (`Path::join` keeps an absolute path as it is).
                Some(path) => super::lines::Input::File(base_dir.join(path)),
                None if c.ctype == ComponentType::File => {
                    anyhow::bail!("{}: `file` needs args.path", c.id)
                }
                None => super::lines::Input::Stdin,
            };
            let mut spout = super::lines::LineSpout::new(input, max_retries);
            let path = c.arg_str("path").unwrap_or_default();
            if c.ctype == ComponentType::File && super::lines::glob::is_glob(path) {
                let strip = std::path::Path::new(path)
                    .is_relative()
                    .then(|| base_dir.to_path_buf());
                spout = spout.globbing(strip);
            }
            if c.args.get("follow").and_then(|v| v.as_bool()) == Some(true) {
                let from_end = c.arg_str("start_at") == Some("end");
                spout = spout.following(from_end);
            }
            let placement = match c.ctype {
                ComponentType::File => super::lines::source_fields::Placement::new(&c.args)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?,
                _ => None,
            };
            if let (Some(p), Some(path)) = (placement, c.arg_str("path")) {
                spout = spout.with_file_fields(p, path);
            }
            let args = super::lines::source_fields::reader_args(&c.args);
            Box::new(match c.args.contains_key("format") {
                true => {
                    let spec = super::parse::spec::Spec::from_args(&args)
                        .map_err(|e| anyhow::anyhow!("{}: {}", c.id, e.message))?;
                    spout
                        .parsing(&spec)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?
                }
                false => spout,
            })
        }
        ComponentType::Generate => Box::new(super::generate::Generate::new(&c.args, task_index)),
        ComponentType::TestWordSpout => Box::new(super::test_words::TestWordSpout::default()),
        ComponentType::Shell => Box::new(super::shell::ShellSpout::new(c, base_dir)),
        ComponentType::Kafka => Box::new(
            super::kafka::spout::KafkaSpout::new(&c.args)
                .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?,
        ),
        ComponentType::Redis => super::redis::spout(c)?,
        other => anyhow::bail!("{}: `{}` cannot run as a spout here", c.id, other.name()),
    })
}

/// A bolt instance for one task.
pub fn bolt(c: &Component, base_dir: &Path) -> anyhow::Result<Box<dyn Bolt>> {
    Ok(match c.ctype {
        ComponentType::Split => Box::new(super::split::Split::new(&c.args)),
        ComponentType::Count => Box::new(super::count::Count::new(&c.args).with_state(c.stateful)),
        ComponentType::Aggregate => {
            Box::new(super::aggregate::Aggregate::new(&c.args)?.with_state(c.stateful))
        }
        ComponentType::Join => Box::new(super::join::Join::new(&c.args)?.with_state(c.stateful)),
        ComponentType::Top if is_total_ranking(c) => {
            Box::new(super::aggregate::ranking::TotalRanking::new(&c.args)?.with_state(c.stateful))
        }
        ComponentType::Top => {
            Box::new(super::aggregate::Aggregate::top(&c.args)?.with_state(c.stateful))
        }
        ComponentType::Dedupe => {
            Box::new(super::dedupe::Dedupe::new(&c.args)?.with_state(c.stateful))
        }
        ComponentType::Lookup => Box::new(super::lookup::Lookup::new(&c.args, base_dir)?),
        ComponentType::Filter => Box::new(super::filter::Filter::new(&c.args)),
        ComponentType::Parse => Box::new(super::parse::Parse::new(&c.args)?),
        ComponentType::Stdout => Box::new(super::stdout::Stdout::new(&c.args)),
        ComponentType::Map => Box::new(super::map::Map::new(&c.args)),
        ComponentType::Log => Box::new(super::log::Log::default()),
        ComponentType::Discard => Box::new(super::discard::Discard),
        ComponentType::Chaos => Box::new(super::chaos::Chaos::new(&c.args)),
        ComponentType::TestWordCounter => Box::new(super::test_words::TestWordCounter::default()),
        ComponentType::Shell => Box::new(super::shell::ShellBolt::new(c, base_dir)),
        ComponentType::Kafka => Box::new(
            super::kafka::sink::KafkaSink::new(&c.args, c.stateful)
                .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?,
        ),
        ComponentType::Redis => super::redis::bolt(c)?,
        other => anyhow::bail!("{}: `{}` cannot run as a bolt here", c.id, other.name()),
    })
}

/// The total ranking of a `top` that runs as more than one task.
fn is_total_ranking(c: &Component) -> bool {
    use super::aggregate::ranking::{RANKING_ARG, TOTAL};
    c.args.get(RANKING_ARG).and_then(|v| v.as_str()) == Some(TOTAL)
}

/// Where each of `names` is among the fields of the first stream into the task's component;
/// an error names the component and the missing field.
pub fn input_positions<S: AsRef<str>>(
    ctx: &TaskContext,
    names: &[S],
) -> anyhow::Result<Vec<usize>> {
    let inputs = input_fields(ctx);
    names
        .iter()
        .map(|n| {
            let n = n.as_ref();
            inputs
                .iter()
                .position(|f| f == n)
                .ok_or_else(|| anyhow::anyhow!("{}: input has no field `{n}`", ctx.component))
        })
        .collect()
}

/// The id of the task's component's output stream `name`, when a stream from the component
/// reads it (`errors` of `parse`, `late` of a windowed `aggregate`): unwired, nothing is sent.
pub fn wired_stream(ctx: &TaskContext, name: &str) -> Option<crate::topology::plan::StreamId> {
    ctx.topology
        .outputs_of(&ctx.component)
        .any(|s| s.stream == name)
        .then(|| ctx.plan.stream_id(name))
        .flatten()
}

/// The fields of the first stream into the task's component (what pass-through bolts emit and
/// what `args.field`-style arguments name).
pub fn input_fields(ctx: &TaskContext) -> Vec<String> {
    ctx.topology
        .inputs_of(&ctx.component)
        .find_map(|s| {
            ctx.topology
                .component(&s.from)
                .and_then(|c| c.output_fields(&s.stream))
                .map(|f| f.to_vec())
        })
        .unwrap_or_default()
}
