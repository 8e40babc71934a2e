//! The record arguments of a source that gives fields of its own besides what its reader
//! reads (`file_path`, `kafka_key`, `redis_id`, `http_remote`, …): the `fields` list as
//! written, and the arguments the reader is given, with the source's fields taken out.

use serde_json::Value as Json;

type Args = serde_json::Map<String, Json>;

/// The `fields` argument, when given, as names.
pub(crate) fn fields_arg(args: &Args) -> Result<Option<Vec<String>>, String> {
    match args.get("fields") {
        None => Ok(None),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| "`fields` must be a list of names".to_string())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err("`fields` must be a list of names".into()),
    }
}

/// `args` with the names `is_source` picks taken out of `fields` (a list left empty stays).
pub(crate) fn without_source_fields(
    args: &Args,
    is_source: &dyn Fn(&str) -> bool,
) -> Result<Args, String> {
    let mut args = args.clone();
    if let Some(fields) = fields_arg(&args)? {
        let read: Vec<Json> = fields
            .into_iter()
            .filter(|f| !is_source(f))
            .map(Json::String)
            .collect();
        args.insert("fields".into(), Json::Array(read));
    }
    Ok(args)
}
