//! The `stdin` and `file` built-ins: lines, or their fields with `format` (what `parse`
//! reads), replayed by the spout itself.

use super::source_fields::{self, Placement};
use super::{Input, LineSpout};
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::file_sink::builtin as sink;
use crate::components::parse::builtin::{
    check_spec, errors_stream, parsed_fields, parsed_types, READS_FORMAT,
};
use crate::components::Spout;
use crate::expr::Type;
use crate::model::{Component, ComponentKind};
use crate::syntax::raw::RawValue;
use crate::syntax::raw::{RawComponent, Span};
use std::path::Path;

/// What spouts that replay lines themselves take.
const REPLAYS: b::Arg = arg("max_retries", A::Number);

/// The `stdin` built-in.
pub(crate) struct StdinType;

/// The `file` built-in.
pub(crate) struct FileType;

impl b::Builtin for StdinType {
    fn name(&self) -> &'static str {
        "stdin"
    }
    fn summary(&self) -> &'static str {
        "spout: one `line` per line of standard input, or its fields with `format`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Spout
    }
    fn args(&self) -> Vec<b::Arg> {
        let mut args = vec![REPLAYS];
        args.extend_from_slice(READS_FORMAT);
        args
    }
    fn rewinds(&self) -> bool {
        true
    }
    fn is_console(&self) -> bool {
        true
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        lines_or_parsed(c)
    }
    fn extra_streams(
        &self,
        c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        parse_errors(c)
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<Type>> {
        Some(types(cx))
    }
    fn check(&self, w: &mut Written) {
        single_reader(w, "stdin");
        if w.arg("format").is_some() {
            let args = w.args_json();
            check_spec(w, &source_fields::reader_args(&args), None);
        }
    }
    fn reads_fields_apart(&self, c: &Component) -> bool {
        reads_fields_ahead(c)
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        let spout = LineSpout::new(
            Input::Stdin,
            crate::components::replay::max_retries(&c.args),
        );
        finish(c, following(c, spout))
    }
}

impl b::Builtin for FileType {
    fn name(&self) -> &'static str {
        "file"
    }
    fn summary(&self) -> &'static str {
        "spout or bolt: reads the lines of a file (`path`), or writes records to files"
    }
    fn roles(&self) -> b::Roles {
        // As a bolt: the `file` sink (`components::file_sink`).
        b::Roles::Both
    }
    fn args(&self) -> Vec<b::Arg> {
        sink::both_roles(file_spout_args())
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::One("path"))
    }
    fn rewinds(&self) -> bool {
        true
    }
    fn keeps_state(&self) -> bool {
        true // the sink (a spout's position is saved without it)
    }
    fn writes(&self, kind: ComponentKind) -> bool {
        kind == ComponentKind::Bolt
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        sink::named_input_fields(rc)
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        if !c.is_spout() {
            return Some(None);
        }
        match source_fields::asked(&c.args) {
            Some(fields) => Some(Some(fields)),
            None => lines_or_parsed(c),
        }
    }
    fn extra_streams(
        &self,
        c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        match c.is_spout() {
            true => parse_errors(c),
            false => Vec::new(),
        }
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<Type>> {
        Some(types(cx))
    }
    fn check(&self, w: &mut Written) {
        match w.kind {
            ComponentKind::Spout => {
                let spout: Vec<&str> = file_spout_args().iter().map(|a| a.name).collect();
                let only_sink: Vec<&str> = sink::ARGS
                    .iter()
                    .map(|a| a.name)
                    .filter(|n| !spout.contains(n))
                    .collect();
                crate::components::sink_args::other_role_args(
                    w, "file", &only_sink, "spout", "sink",
                );
                check_file(w)
            }
            ComponentKind::Bolt => sink::check(w, &file_spout_args()),
        }
    }
    fn reads_fields_apart(&self, c: &Component) -> bool {
        reads_fields_ahead(c)
    }
    fn spout(&self, c: &Component, _task: u32, base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        file_spout(c, base)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        Some(sink::bolt(c, base))
    }
}

/// What a `file` spout reads.
fn file_spout_args() -> Vec<b::Arg> {
    let mut args = vec![
        arg("path", A::Text),
        arg("follow", A::Bool),
        arg("start_at", A::OneOf(&["beginning", "end"])),
        REPLAYS,
    ];
    args.extend_from_slice(READS_FORMAT);
    args
}

/// A `file` spout: needs its path; `fields` names the file fields (the rest must be `line`,
/// or what `format` reads); `start_at` needs `follow`.
fn check_file(w: &mut Written) {
    if w.arg("path").is_none() {
        let at = w.at_type();
        w.error("file spout without `args.path`", at);
    }
    single_reader(w, "file");
    let args = w.args_json();
    if w.arg("format").is_some() {
        match Placement::new(&args) {
            Err(why) => {
                let span = w.arg_span("fields");
                w.error(why, span);
            }
            Ok(_) => {
                let path = w
                    .arg("path")
                    .and_then(|p| p.value.as_str())
                    .map(String::from);
                check_spec(w, &source_fields::reader_args(&args), path.as_deref());
            }
        }
    } else if w.arg("fields").is_some() {
        if let Err(why) = Placement::new(&args) {
            let span = w.arg_span("fields");
            w.error(why, span);
        }
    }
    start_at_needs_follow(w);
}

/// `start_at` says where a followed file starts: without `follow: true` it would be
/// silently ignored (a whole file is always read from its start).
fn start_at_needs_follow(w: &mut Written) {
    let following = w
        .arg("follow")
        .is_some_and(|f| matches!(f.value, RawValue::Bool(true)));
    if let (Some(s), false) = (w.arg("start_at").cloned(), following) {
        w.error("`start_at` needs `follow: true`", s.span).help =
            Some("a file that is not followed is read from its start".into());
    }
}

/// `stdin` and `file` read one stream each: a second task would read the same input
/// again (`file`) or take lines from under the first one (`stdin`).
fn single_reader(w: &mut Written, name: &str) {
    let tasks = w.tasks;
    if tasks <= 1 {
        return;
    }
    let rc = w.rc;
    let span = rc
        .tasks
        .as_ref()
        .map(|t| t.span)
        .or(rc.parallelism.as_ref().map(|p| p.span))
        .unwrap_or(w.at_type());
    w.error(
        format!("a `{name}` spout reads its input once, in one task: it cannot have {tasks} tasks"),
        span,
    )
    .help = Some("give the work after it more tasks instead (`| parse(...) x4`, `parallelism: 4` on the bolts)".into());
}

/// One `line`, or the fields `format` reads.
fn lines_or_parsed(c: &Component) -> b::Fields {
    match c.args.contains_key("format") {
        true => Some(Some(parsed_fields(&c.args))),
        false => b::one_field("line"),
    }
}

/// The `errors` stream, when the spout parses.
fn parse_errors(c: &Component) -> Vec<(String, Vec<String>)> {
    match c.args.contains_key("format") {
        true => vec![errors_stream()],
        false => Vec::new(),
    }
}

/// Lines are text; parsed fields have the types `types` names.
fn types(cx: &b::TypeCx) -> Vec<Type> {
    match cx.c.args.contains_key("format") {
        true => parsed_types(&cx.c.args, cx.fields.len()),
        false => cx.all(Type::Str),
    }
}

/// A `file` spout for one task: a glob, followed, with file fields, as its arguments say.
fn file_spout(c: &Component, base_dir: &Path) -> anyhow::Result<Box<dyn Spout>> {
    // Relative paths are relative to the topology file's folder, as every path in a topology
    // file is (`Path::join` keeps an absolute path as it is).
    let Some(path) = c.arg_str("path") else {
        anyhow::bail!("{}: `file` needs args.path", c.id)
    };
    let max_retries = crate::components::replay::max_retries(&c.args);
    let mut spout = LineSpout::new(Input::File(base_dir.join(path)), max_retries);
    if super::glob::is_glob(path) {
        let strip = Path::new(path)
            .is_relative()
            .then(|| base_dir.to_path_buf());
        spout = spout.globbing(strip);
    }
    spout = following(c, spout);
    let placement = Placement::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
    if let Some(p) = placement {
        spout = spout.with_file_fields(p, path);
    }
    finish(c, spout)
}

/// Its reader threads read the lines into fields ahead (`LineSpout::parsing`): JSON, CSV or
/// TSV, neither followed nor a glob (whose readers read lines only).
fn reads_fields_ahead(c: &Component) -> bool {
    let formats = matches!(c.arg_str("format"), Some("json" | "csv" | "tsv"));
    let followed = c.args.get("follow").and_then(|v| v.as_bool()) == Some(true);
    let glob = c.arg_str("path").is_some_and(super::glob::is_glob);
    formats && !followed && !glob
}

/// `follow: true`: from the start, or the end with `start_at: end`.
fn following(c: &Component, spout: LineSpout) -> LineSpout {
    if c.args.get("follow").and_then(|v| v.as_bool()) == Some(true) {
        let from_end = c.arg_str("start_at") == Some("end");
        return spout.following(from_end);
    }
    spout
}

/// The spout, parsing what it reads when it has a `format`.
fn finish(c: &Component, spout: LineSpout) -> anyhow::Result<Box<dyn Spout>> {
    if !c.args.contains_key("format") {
        return Ok(Box::new(spout));
    }
    let args = source_fields::reader_args(&c.args);
    let spec = crate::components::parse::spec::Spec::from_args(&args)
        .map_err(|e| anyhow::anyhow!("{}: {}", c.id, e.message))?;
    let parsing = spout
        .parsing(&spec)
        .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
    Ok(Box::new(parsing))
}
