//! The `storm` commands a Storm operator types that need no cluster: `storm jar` (explained:
//! there is no JVM), `storm version` and `storm localconfvalue KEY`. (`storm local` is
//! `storm run`.)

use super::Status;
use crate::cli::{ConfValueArgs, JarArgs};
use crate::config::layers;

/// `storm jar`: no JVM runs here. One line saying what to use instead; usage status (2).
pub(crate) fn jar(args: &JarArgs) -> Status {
    let what = args.args.first().map_or("a jar", String::as_str);
    crate::stderr_println!(
        "error: storm jar: {what} is JVM code and this storm runs no JVM; describe the topology \
         in Flux YAML (shell components for your scripts) and use `storm submit FILE` \
         (or `storm local FILE`): see docs/migrating.md"
    );
    Status::Usage
}

/// `storm version`: the version, and what this storm is.
pub(crate) fn version() -> Status {
    println!(
        "storm {} (a Rust implementation of Apache Storm's model: Flux YAML, multilang, \
         nimbus and supervisors; no JVM)",
        env!("CARGO_PKG_VERSION")
    );
    Status::Success
}

/// `storm localconfvalue KEY`: `KEY: VALUE` (the value as JSON) from the local layers; a key
/// that is not set is an error, never a made-up value. Secrets are never printed.
pub(crate) fn local_conf_value(args: &ConfValueArgs) -> Status {
    let config = match layers::cluster_config(&args.config.overrides) {
        Ok(c) => c,
        Err(errors) => {
            for e in errors {
                crate::stderr_println!("error: {e}");
            }
            return Status::Failure;
        }
    };
    let key = args.key.as_str();
    let Some(value) = config.get(key) else {
        crate::stderr_println!("error: `{key}` is not set in the local configuration");
        return Status::Failure;
    };
    if (key.ends_with(".secret") || key.ends_with(".password") || key == "ui.token")
        && !value.is_null()
    {
        println!("{key}: \"<hidden>\"");
    } else {
        println!("{key}: {value}");
    }
    Status::Success
}
