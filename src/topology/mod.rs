//! Topology files: reading (YAML, Flux, DSL), validating into the model, and the graph view.

pub mod dsl;
mod flux;
pub(crate) mod graph;
#[cfg(test)]
mod partials_tests;
#[cfg(test)]
mod rebalance_tests;
pub mod validate;
mod yaml;

use crate::model::Topology;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::raw;
use std::path::{Path, PathBuf};

/// What the caller asks of loading, beyond the file itself.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `-c KEY=VALUE` overrides, VALUE read as YAML.
    pub overrides: Vec<String>,
    /// Properties file for Flux `${key}` substitution.
    pub filter: Option<PathBuf>,
}

/// A topology that passed validation, with its warnings.
#[derive(Debug)]
pub struct Loaded {
    pub topology: Topology,
    pub(crate) source: Source,
    pub(crate) warnings: Vec<Diagnostic>,
}

/// Why a topology could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read at all (missing, a directory, binary, too large...): one line.
    Unreadable(String),
    /// Read, but wrong: every diagnostic found (errors and warnings).
    Invalid {
        source: Source,
        diagnostics: Vec<Diagnostic>,
    },
}

/// Files larger than this are refused before reading (a topology is a few kilobytes).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// What [`read_bounded`] found.
#[derive(Debug, PartialEq, Eq)]
enum Bounded {
    /// All of it, within the limit.
    Whole(Vec<u8>),
    /// More than the limit (only the limit and one byte were read).
    TooLarge,
}

/// Read a file, but never more than `limit` bytes: devices (`/dev/zero`), pipes and files that
/// grow while read have no trustworthy size, so the read itself is cut off.
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Bounded> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(if bytes.len() as u64 > limit {
        Bounded::TooLarge
    } else {
        Bounded::Whole(bytes)
    })
}

/// [`read_bounded`] with [`MAX_FILE_BYTES`], as UTF-8 text; the error is one phrase
/// (`too large ...`, the I/O error, `not UTF-8 text`).
fn read_text_bounded(path: &Path) -> Result<String, String> {
    match read_bounded(path, MAX_FILE_BYTES).map_err(|e| e.to_string())? {
        Bounded::Whole(b) => String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()),
        Bounded::TooLarge => Err(format!("larger than the limit of {MAX_FILE_BYTES} bytes")),
    }
}

/// Read, parse and validate a topology file (format chosen by extension and content).
///
/// `.storm` files are the DSL; anything else is YAML, read as Flux when it names JVM classes
/// or Flux-only sections (`components`, `includes`, `topologySource`).
pub fn load_file(path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let text = read_text(path)?;
    load_text(text, path, opts)
}

/// Parse and validate a topology file's text already read (nimbus and workers receive the text
/// of a submitted file); `path` chooses the format and the base directory as in [`load_file`].
pub fn load_text(text: String, path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let source = Source {
        name: path.display().to_string(),
        text,
    };
    let base_dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (raw, default_name) = if path.extension().is_some_and(|e| e == "storm") {
        (dsl::parse(&source.text), Some(name_from_stem(path)))
    } else {
        (parse_yaml(&source.text, &base_dir, opts), None)
    };
    finish(
        raw,
        source,
        path.to_path_buf(),
        base_dir,
        opts,
        default_name,
    )
}

/// Parse and validate an inline DSL topology (`-e TEXT`).
pub fn load_inline(text: &str, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let source = Source {
        name: "<-e>".into(),
        text: text.to_string(),
    };
    let raw = dsl::parse(text);
    let base_dir = PathBuf::from(".");
    let name = Some("inline".to_string());
    finish(raw, source, PathBuf::from("<-e>"), base_dir, opts, name)
}

/// A DSL file without a name is named after its file: letters, digits, '-', '_' kept.
fn name_from_stem(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "topology".into()
    } else {
        name
    }
}

/// The text of a topology file, or a one-line reason it cannot be one.
fn read_text(path: &Path) -> Result<String, LoadError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        LoadError::Unreadable(match e.kind() {
            std::io::ErrorKind::NotFound => format!("{shown}: no such file"),
            _ => format!("{shown}: cannot read: {e}"),
        })
    })?;
    if meta.is_dir() {
        return Err(LoadError::Unreadable(format!(
            "{shown}: is a directory, not a topology file"
        )));
    }
    let too_large = |size: String| {
        LoadError::Unreadable(format!(
            "{shown}: too large for a topology file ({size}; the limit is {MAX_FILE_BYTES} bytes)"
        ))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(format!("{} bytes", meta.len())));
    }
    let bytes = match read_bounded(path, MAX_FILE_BYTES) {
        Ok(Bounded::Whole(b)) => b,
        // A device or pipe reports no size: it is cut off at the limit instead.
        Ok(Bounded::TooLarge) => return Err(too_large("more than the limit".into())),
        Err(e) => return Err(LoadError::Unreadable(format!("{shown}: cannot read: {e}"))),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(LoadError::Unreadable(format!(
            "{shown}: empty file (a topology needs at least a name and a spout)"
        )));
    }
    if bytes.contains(&0) {
        return Err(LoadError::Unreadable(format!(
            "{shown}: binary data, not a topology file"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        LoadError::Unreadable(format!(
            "{shown}: not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// YAML text to the raw form: our format, or Flux (detected by content).
pub fn parse_yaml(text: &str, base_dir: &Path, opts: &LoadOptions) -> raw::RawTopology {
    let mut tree = match yaml::parse_tree(text) {
        Ok(t) => t,
        Err(d) => {
            return raw::RawTopology {
                diagnostics: vec![d],
                ..raw::RawTopology::default()
            }
        }
    };
    if !flux::is_flux(&tree) {
        return yaml::read_topology(&tree);
    }
    let mut diagnostics = Vec::new();
    let props = match &opts.filter {
        Some(f) => flux::Properties::read(f).unwrap_or_else(|e| {
            diagnostics.push(flux::filter_error(e));
            flux::Properties::default()
        }),
        None => flux::Properties::default(),
    };
    flux::substitute(&mut tree, &props, &mut diagnostics);
    let mut raw = flux::read_topology_of(&tree, Some(text), base_dir, &props);
    raw.diagnostics.extend(diagnostics);
    raw
}

fn finish(
    raw: raw::RawTopology,
    source: Source,
    path: PathBuf,
    base_dir: PathBuf,
    opts: &LoadOptions,
    default_name: Option<String>,
) -> Result<Loaded, LoadError> {
    let nothing_read = raw.name.is_none()
        && raw.config.is_empty()
        && raw.spouts.is_empty()
        && raw.bolts.is_empty()
        && raw.streams.is_empty();
    if nothing_read && raw.diagnostics.iter().any(|d| d.is_error()) {
        // A syntax error stopped the reading: validating nothing would only add noise.
        return Err(LoadError::Invalid {
            source,
            diagnostics: raw.diagnostics,
        });
    }
    let ctx = validate::Context {
        text: &source.text,
        path,
        base_dir,
        overrides: &opts.overrides,
        default_name,
    };
    match validate::validate(raw, &ctx) {
        Ok((topology, warnings)) => Ok(Loaded {
            topology,
            source,
            warnings,
        }),
        Err(diagnostics) => Err(LoadError::Invalid {
            source,
            diagnostics,
        }),
    }
}
