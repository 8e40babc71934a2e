//! The `redis` bolt's arguments, read and checked: the `command`, the `key` template, `field`
//! (a template: a hash field or a set member), `value` (a field of the input), `ttl`, `as`,
//! `filter` and `cache`. Every error names the argument at fault, so `storm validate` can
//! point at it.

use super::template::Template;
use serde_json::Value as Json;
use std::time::Duration;

type Args = serde_json::Map<String, Json>;

/// The commands, by their argument name.
const COMMANDS: &[&str] = &[
    "get",
    "hget",
    "hmget",
    "sismember",
    "set",
    "hset",
    "incrby",
    "hincrby",
    "zincrby",
    "sadd",
    "xadd",
    "publish",
];

/// How many answers a lookup keeps by default, and for how long.
const DEFAULT_CACHE: usize = 10_000;
pub(crate) const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Get,
    Hget,
    Hmget,
    Sismember,
    Set,
    Hset,
    Incrby,
    Hincrby,
    Zincrby,
    Sadd,
    Xadd,
    Publish,
}

impl Command {
    fn from_name(name: &str) -> Option<Command> {
        use Command::*;
        let all = [
            Get, Hget, Hmget, Sismember, Set, Hset, Incrby, Hincrby, Zincrby, Sadd, Xadd, Publish,
        ];
        COMMANDS.iter().position(|c| *c == name).map(|i| all[i])
    }

    pub(crate) fn name(self) -> &'static str {
        COMMANDS[self as usize]
    }

    /// Lookups (they add a field, or filter); the others write.
    pub(crate) fn reads(self) -> bool {
        matches!(
            self,
            Command::Get | Command::Hget | Command::Hmget | Command::Sismember
        )
    }

    /// Whether the command takes a hash field or member (`field`): required, or refused.
    fn needs_field(self) -> bool {
        use Command::*;
        matches!(
            self,
            Hget | Hmget | Sismember | Hset | Hincrby | Zincrby | Sadd
        )
    }

    /// Whether the command writes a value (`value`); `incrby`-like ones take an increment.
    fn takes_value(self) -> bool {
        use Command::*;
        matches!(
            self,
            Set | Hset | Incrby | Hincrby | Zincrby | Xadd | Publish
        )
    }
}

/// The bolt's arguments, checked.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) command: Command,
    pub(crate) key: Template,
    /// Hash fields or members (`hmget`: several).
    pub(crate) fields: Vec<Template>,
    /// Input fields written (`xadd`: several; absent: the whole tuple).
    pub(crate) value: Vec<String>,
    pub(crate) ttl: Option<Duration>,
    /// Output fields of a lookup (`hmget`: one per hash field).
    pub(crate) out: Vec<String>,
    pub(crate) filter: bool,
    /// Bound on cached lookups (0: no cache).
    pub(crate) cache: usize,
}

/// An error, with the argument it is about (`None`: the arguments as a whole).
type SpecError = (Option<&'static str>, String);

fn strings(args: &Args, key: &'static str) -> Result<Vec<String>, SpecError> {
    match args.get(key) {
        None => Ok(Vec::new()),
        Some(Json::String(s)) => Ok(vec![s.clone()]),
        Some(Json::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(String::from)
                    .ok_or_else(|| (Some(key), format!("`{key}` must hold strings, not {i}")))
            })
            .collect(),
        Some(other) => Err((Some(key), format!("`{key}` must be a string, not {other}"))),
    }
}

/// `command`, one of [`COMMANDS`] (any case).
fn command_of(args: &Args) -> Result<Command, SpecError> {
    match args.get("command") {
        None => Err((
            None,
            format!("needs `command`: one of {}", COMMANDS.join(", ")),
        )),
        Some(Json::String(c)) => Command::from_name(&c.to_ascii_lowercase()).ok_or_else(|| {
            let hint = crate::syntax::suggest::suggest(c, COMMANDS.iter().copied())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            (
                Some("command"),
                format!(
                    "unknown command `{c}`: {hint}the commands are {}",
                    COMMANDS.join(", ")
                ),
            )
        }),
        Some(other) => Err((
            Some("command"),
            format!("`command` must be a name, not {other}"),
        )),
    }
}

/// `key`, a template every command needs.
fn key_of(args: &Args, command: Command) -> Result<Template, SpecError> {
    match args.get("key").and_then(Json::as_str) {
        Some(k) => Template::parse(k).map_err(|e| (Some("key"), e)),
        None => Err((
            Some("command"),
            format!(
                "`{}` needs `key` (e.g. `key: \"user:{{user}}\"`)",
                command.name()
            ),
        )),
    }
}

/// `field`: templates, as many as the command takes.
fn fields_of(args: &Args, command: Command) -> Result<Vec<Template>, SpecError> {
    let name = command.name();
    let fields = strings(args, "field")?
        .iter()
        .map(|f| Template::parse(f).map_err(|e| (Some("field"), e)))
        .collect::<Result<Vec<_>, _>>()?;
    match (command.needs_field(), fields.len()) {
        (true, 0) => Err((
            Some("command"),
            format!("`{name}` needs `field` (the hash field or member, a template like `key`)"),
        )),
        (false, n) if n > 0 => Err((Some("field"), format!("`{name}` takes no `field`"))),
        (true, n) if n > 1 && command != Command::Hmget => Err((
            Some("field"),
            format!("`{name}` takes one `field`; `hmget` takes several"),
        )),
        _ => Ok(fields),
    }
}

/// `value`: the input field(s) a write sends.
fn value_of(args: &Args, command: Command) -> Result<Vec<String>, SpecError> {
    let name = command.name();
    let value = strings(args, "value")?;
    if !value.is_empty() && !command.takes_value() {
        return Err((Some("value"), format!("`{name}` takes no `value`")));
    }
    if value.len() > 1 && command != Command::Xadd {
        return Err((Some("value"), format!("`{name}` takes one `value` field")));
    }
    if matches!(command, Command::Set | Command::Hset) && value.is_empty() {
        return Err((
            Some("command"),
            format!("`{name}` needs `value` (the input field written)"),
        ));
    }
    Ok(value)
}

/// `ttl`: a duration, not zero.
fn ttl_of(args: &Args) -> Result<Option<std::time::Duration>, SpecError> {
    let Some(v) = args.get("ttl") else {
        return Ok(None);
    };
    crate::config::duration_of(v)
        .filter(|d| !d.is_zero())
        .map(Some)
        .ok_or_else(|| {
            (
                Some("ttl"),
                format!("`ttl` must be a duration (`30s`, `1h`) or seconds, not {v}"),
            )
        })
}

/// `cache`: entries a lookup keeps (writes take none).
fn cache_of(args: &Args, command: Command) -> Result<usize, SpecError> {
    match args.get("cache") {
        None if command.reads() => Ok(DEFAULT_CACHE),
        None => Ok(0),
        Some(_) if !command.reads() => Err((
            Some("cache"),
            format!("`{}` writes: only lookups take `cache`", command.name()),
        )),
        Some(v) => v.as_u64().map(|n| n as usize).ok_or_else(|| {
            (
                Some("cache"),
                format!("`cache` is a number of entries (0: none), not {v}"),
            )
        }),
    }
}

impl Spec {
    pub(crate) fn from_args(args: &Args) -> Result<Spec, SpecError> {
        let command = command_of(args)?;
        let key = key_of(args, command)?;
        let fields = fields_of(args, command)?;
        let value = value_of(args, command)?;
        let out = strings(args, "as")?;
        let filter = match args.get("filter") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => {
                return Err((
                    Some("filter"),
                    format!("`filter` is true or false, not {other}"),
                ))
            }
        };
        Self::check_reads(command, &fields, &out, filter, args)?;
        Ok(Spec {
            command,
            key,
            fields,
            value,
            ttl: ttl_of(args)?,
            out,
            filter,
            cache: cache_of(args, command)?,
        })
    }

    /// A lookup needs `as` (unless it only filters), one name per hash field for `hmget`;
    /// a write takes neither `as` nor `filter`.
    fn check_reads(
        command: Command,
        fields: &[Template],
        out: &[String],
        filter: bool,
        args: &Args,
    ) -> Result<(), SpecError> {
        let name = command.name();
        if !command.reads() {
            for arg in ["as", "filter"] {
                if args.contains_key(arg) {
                    return Err((
                        Some(arg),
                        format!(
                            "`{name}` writes: `{arg}` is for lookups (get, hget, hmget, sismember)"
                        ),
                    ));
                }
            }
            return Ok(());
        }
        if out.is_empty() && !filter {
            return Err((Some("command"), format!("`{name}` is a lookup: name its output field with `as`, or keep only hits with `filter: true`")));
        }
        let want = if command == Command::Hmget {
            fields.len()
        } else {
            1
        };
        if !out.is_empty() && out.len() != want {
            return Err((
                Some("as"),
                format!(
                    "`{name}` gives {want} value(s): `as` names {want}, not {}",
                    out.len()
                ),
            ));
        }
        Ok(())
    }

    #[cfg(test)]
    /// The input fields the arguments name (templates and `value`), for the checks of
    /// `storm validate` and for binding at start.
    fn input_fields(&self) -> Vec<String> {
        let mut names: Vec<String> = self.key.fields().iter().map(|s| s.to_string()).collect();
        for f in &self.fields {
            names.extend(f.fields().iter().map(|s| s.to_string()));
        }
        names.extend(self.value.iter().cloned());
        names
    }

    /// The bolt's output fields given its input's (`None`: a write, which emits nothing).
    pub(crate) fn output_fields(&self, input: &[String]) -> Option<Vec<String>> {
        if !self.command.reads() {
            return None;
        }
        let mut fields = input.to_vec();
        fields.extend(self.out.iter().cloned());
        Some(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(j: Json) -> Result<Spec, SpecError> {
        Spec::from_args(j.as_object().expect("an object"))
    }

    #[test]
    fn commands_read_their_arguments() {
        let s = spec(serde_json::json!({"command": "hget", "key": "u:{user}", "field": "country", "as": "country"}))
            .expect("a spec");
        assert_eq!(s.command, Command::Hget);
        assert_eq!(s.input_fields(), ["user"]);
        assert_eq!(
            s.output_fields(&["user".into()]),
            Some(vec!["user".into(), "country".into()])
        );
        let s = spec(serde_json::json!({"command": "INCRBY", "key": "c:{w}", "ttl": "1m"}))
            .expect("a spec");
        assert_eq!(s.ttl, Some(Duration::from_secs(60)));
        assert_eq!(s.output_fields(&[]), None);
    }

    #[test]
    fn mistakes_name_their_argument() {
        let e = spec(serde_json::json!({"command": "hgett", "key": "k"})).expect_err("an error");
        assert_eq!(e.0, Some("command"));
        assert!(e.1.contains("did you mean `hget`"), "{}", e.1);
        let e = spec(serde_json::json!({"command": "get", "key": "k"})).expect_err("an error");
        assert!(e.1.contains("`as`"), "{}", e.1);
        let e = spec(
            serde_json::json!({"command": "hmget", "key": "k", "field": ["a", "b"], "as": "x"}),
        )
        .expect_err("an error");
        assert_eq!(e.0, Some("as"));
        let e =
            spec(serde_json::json!({"command": "set", "key": "k", "value": "v", "filter": true}))
                .expect_err("an error");
        assert_eq!(e.0, Some("filter"));
        assert!(spec(
            serde_json::json!({"command": "sismember", "key": "b", "field": "{u}", "filter": true})
        )
        .is_ok());
    }
}
